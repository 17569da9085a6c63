#include "sandbox/actors/tls.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

namespace sandbox::actors {

// Placeholder: the checks are still to be written.
result<void> validate(const tls_config&) {
  return {};
}

void configure_network(caf::actor_system_config& sys_cfg,
                       const tls_config& cfg) {
  sys_cfg.load<caf::io::middleman>();
  if (!cfg.enabled())
    return;
  sys_cfg.load<caf::openssl::manager>();
  sys_cfg.openssl_certificate = cfg.certificate_file;
  sys_cfg.openssl_key = cfg.key_file;
  sys_cfg.openssl_cafile = cfg.ca_file;
}

} // namespace sandbox::actors
