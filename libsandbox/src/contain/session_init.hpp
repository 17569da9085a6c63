#pragma once

// The PID 1 of a contained session (docs/security.md, "Namespaces, made
// once per session"): started by clone3 in new user, PID, mount, IPC, UTS,
// network and cgroup namespaces, it sets up its mounts, loopback and host name
// with system calls only, then executes the init program (contain/init.c)
// from a sealed memfd.

#include <sys/types.h>

#include "sandbox/contain/contained_session.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox::detail {

/// Where the set-up of a session's init failed (`init_stage_name`).
enum init_stage : int {
  init_ok = 0,
  init_deathsig,
  init_sync,
  init_ids,
  init_setgroups,
  init_uid_map,
  init_gid_map,
  init_private,
  init_open_tree,
  init_attr,
  init_root,
  init_mkdir,
  init_move_mount,
  init_tmpfs,
  init_symlink,
  init_proc,
  init_devpts,
  init_pivot,
  init_loopback,
  init_hostname,
  init_stdio,
  init_exec,
};

class id_lease;

/// A session's init, running.
struct started_init {
  pid_t pid = -1;
  /// Its pidfd; its exit signal is none (a host's waitpid(-1) never sees
  /// it): reap it with waitid(__WALL).
  unique_fd pidfd;
};

/// Starts the init of a session with the mounts of `spec` (the private
/// /tmp and /dev/shm, the denied paths covered, the working directory and
/// home brought back), in `spec.cgroup` when set. Errors: `unsupported`
/// naming the step the kernel refused (a failed init is reaped here),
/// `io_error` when the cgroup cannot be opened.
/// With `ids` the session's root is host uid and gid `ids->id()`: the node
/// writes the maps and makes the working directory, home and `allow_write`
/// paths id-mapped mounts (`unsupported` naming a path whose file system
/// has none).
result<started_init> start_init(const containment_spec& spec,
                                const id_lease* ids = nullptr);

} // namespace sandbox::detail
