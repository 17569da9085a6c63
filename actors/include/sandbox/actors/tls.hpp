#pragma once

// Mutual TLS between a node and its clients (caf::openssl).

#include <string>

#include <caf/fwd.hpp>

#include "sandbox/errc.hpp"

namespace sandbox::actors {

/// The certificate, key and CA of one side of a connection. All three empty:
/// plain `caf::io`; all three set: mutual TLS, each side verifies the other
/// against `ca_file`.
struct tls_config {
  /// PEM certificate of this side.
  std::string certificate_file;
  /// PEM private key of `certificate_file`.
  std::string key_file;
  /// PEM certificate(s) of the CA that signed the peer's certificate.
  std::string ca_file;

  bool enabled() const noexcept {
    return !certificate_file.empty() || !key_file.empty() || !ca_file.empty();
  }
};

/// Checks `cfg` before anything starts: all three files given or none, each
/// readable PEM, the key matching the certificate.
/// @returns `invalid_argument` naming the file and the fault.
result<void> validate(const tls_config& cfg);

/// Loads the network layer into `sys_cfg` (caf::io, and caf::openssl with
/// `cfg`'s files when TLS is enabled). Call before the actor system exists.
void configure_network(caf::actor_system_config& sys_cfg,
                       const tls_config& cfg);

} // namespace sandbox::actors
