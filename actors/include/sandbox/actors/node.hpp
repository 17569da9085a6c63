#pragma once

#include <functional>
#include <string>

#include <caf/fwd.hpp>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/actors/runtime.hpp"

namespace sandbox::actors {

/// Runs once when a session is first created (R21), with the restricted
/// view of it, on a detached actor of its own (it may block, e.g. use the
/// blocking facade). A non-empty error stops the session and reaches the
/// creator.
using first_create_hook
  = std::function<caf::error(caf::actor_system&, restricted_session)>;

/// Settings of a node (the provider).
struct node_config {
  /// Where sessions created without a working directory live:
  /// `<base_directory>/<session id>`. Empty: the current directory.
  std::string base_directory;
  /// The range of TCP ports leased to sessions, one each (R18).
  uint16_t first_port = 20000;
  uint16_t last_port = 59999;
  first_create_hook on_first_create;
};

/// Spawns a node actor sharing `rt` with its sessions.
node_actor spawn_node(caf::actor_system& sys, runtime_ptr rt,
                      node_config cfg);

} // namespace sandbox::actors
