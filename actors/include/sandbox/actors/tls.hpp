#pragma once

// Mutual TLS between a node and its clients (caf::openssl).

#include <cstdint>
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
/// With TLS it also installs, once per process, the observer of TLS
/// handshakes: a node logs every refused handshake (spdlog, warning: peer
/// address and OpenSSL's reason), and a client keeps the reason of its own
/// failed handshakes for `describe_handshake_failure`. The observer sees
/// only the OpenSSL contexts made on the threads of the actor systems
/// configured here (a CAF thread hook marks them): it gives them an info
/// callback, TLS 1.3 suites with AES-128-GCM first, and a BIO callback that
/// empties the thread's OpenSSL error queue before each socket read and
/// write. Contexts made on any other thread are left as OpenSSL made them.
void configure_network(caf::actor_system_config& sys_cfg,
                       const tls_config& cfg);

/// Explains, for people, a connect to the node `host:port` that failed
/// with CAF's `err` during the handshake: "TLS handshake failed: the node's
/// certificate did not verify against --tls-ca: unable to get local issuer
/// certificate", or "" when `err` is no handshake failure. `tls`: whether
/// this side used TLS. CAF reports every failed handshake alike (the
/// connection closed during its handshake, or could not start); the reason
/// comes from the observer that `configure_network` installs. Callers
/// report it as `node_unreachable`: the node cannot be used, and a refusal
/// cannot be told apart from a node that went away mid-handshake.
std::string describe_handshake_failure(const std::string& host, uint16_t port,
                                       bool tls, const caf::error& err);

} // namespace sandbox::actors
