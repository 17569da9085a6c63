#pragma once

#include <string>

#include <caf/fwd.hpp>

#include "sandbox/actors/protocol.hpp"

namespace sandbox::actors {

/// Spawns the filesystem worker of a session whose working directory is
/// `working_directory` (absolute). File I/O never blocks the session actor
/// or the scheduler's threads: the worker runs detached.
filesystem_actor spawn_filesystem(caf::actor_system& sys,
                                  std::string working_directory);

} // namespace sandbox::actors
