#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <caf/fwd.hpp>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/actors/runtime.hpp"
#include "sandbox/port_lease.hpp"

namespace sandbox::actors {

/// Runs once when a session is first created (§21), with the restricted
/// view of it, on a detached actor of its own: it may block, e.g. make
/// requests to the view with a `caf::scoped_actor` of the given system (the
/// blocking facade needs the full session, which the hook does not get). A
/// non-empty error stops the session and reaches the creator.
using first_create_hook
  = std::function<caf::error(caf::actor_system&, restricted_session)>;

/// Settings of a node (the provider). `validate` says whether a node can
/// work with them.
struct node_config {
  /// Where sessions created without a working directory live:
  /// `<base_directory>/<session id>`. Empty: the current directory.
  std::string base_directory;
  /// The range of TCP ports leased to sessions, one each (§18); both
  /// inclusive, `1 <= first_port <= last_port`.
  uint16_t first_port = default_first_leased_port;
  uint16_t last_port = default_last_leased_port;
  first_create_hook on_first_create;
  /// How long the sessions of a client whose owner actor went down (its
  /// connection dropped) live on before the node stops them; detached
  /// sessions are never stopped that way. Not negative.
  std::chrono::milliseconds client_grace{30000};
};

/// Checks every value of `cfg`.
/// @returns `invalid_argument` naming the first bad value, e.g.
///   `node_config: invalid port range 50000-40000: ...`.
result<void> validate(const node_config& cfg);

/// Spawns a node actor sharing `rt` with its sessions. When `validate`
/// fails for `rt->config()` or `cfg`, the node does not die: it answers
/// every request with that `invalid_argument` error.
node_actor spawn_node(caf::actor_system& sys, runtime_ptr rt, node_config cfg);

} // namespace sandbox::actors
