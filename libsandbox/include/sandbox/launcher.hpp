#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

/// Everything needed to start one child.
struct launch_spec {
  /// Absolute path of the program, e.g. "/bin/sh".
  std::string executable;
  /// Full argv, argv[0] included.
  std::vector<std::string> argv;
  /// Working directory of the child; must exist.
  std::string cwd;
  /// The child's complete environment.
  env_map env;
  /// Gives the child a stdin pipe; otherwise its stdin is /dev/null.
  bool pipe_stdin = false;
};

/// A started child: its pid (also its process group id) and our pipe ends.
struct launched_child {
  pid_t pid = -1;
  /// Write end of the child's stdin; empty unless `pipe_stdin` was set.
  unique_fd stdin_w;
  unique_fd stdout_r;
  unique_fd stderr_r;
  /// A pidfd (pidfd_open) that becomes readable when the child exits.
  unique_fd pidfd;
};

/// Starts a child with posix_spawn (vfork-style: the cost does not grow with
/// the parent's memory) as the leader of a new process group, with default
/// signal dispositions, an empty signal mask and no inherited descriptors
/// beyond 0, 1 and 2. The launch is a pipeline of small steps, each in
/// launcher.cpp: pipes, file actions, attributes, environment, spawn, pidfd.
///
/// Errors: `path_not_found` if `cwd` or the executable does not exist or
/// `cwd` is not a directory (`working directory does not exist: <cwd>`,
/// `working directory is not a directory: <cwd>`), `permission_denied` if
/// either is not accessible (the message names which), `invalid_argument`
/// when arguments and environment exceed the kernel's limits (E2BIG; the
/// message names ARG_MAX and MAX_ARG_STRLEN), `io_error` otherwise.
result<launched_child> launch(const launch_spec& spec);

/// Returns the environment of this process as a map.
env_map current_environment();

} // namespace sandbox
