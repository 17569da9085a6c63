#pragma once

// The file system a contained session sees (docs/security.md, "What a
// contained command sees"): a root of its own that starts empty and gets
// the system's read-only directories, the session's own directories, a
// private /tmp and /dev/shm, a minimal /dev and its own /proc. Planned here
// by the node (`plan_view`); built by the session's init with system
// calls only (`build_view`, called from session_init.cpp).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "sandbox/contain/contained_session.hpp"

namespace sandbox::detail {

/// One step of building the root, in the order of the plan (parents
/// first). Paths are relative to the new root ("usr", "dev/null").
struct view_mount {
  enum kind_t : int {
    /// A clone of the host's mount tree at `source` (or the detached mount
    /// `tree`), with the mount attributes `attr` set on it and below.
    bind,
    /// A tmpfs with the options `data`.
    tmpfs,
    /// The proc of the session's PID namespace.
    proc,
    /// A devpts instance of its own.
    devpts,
    /// A symbolic link to `data`.
    symlink,
  } kind;
  const char* target = nullptr;
  const char* source = nullptr;
  const char* data = nullptr;
  /// MOUNT_ATTR_* (linux/mount.h) set on a bind.
  uint64_t attr = 0;
  /// The host path is a directory: its submounts come too.
  bool recursive = false;
  /// The mount point is a file (made empty), not a directory.
  bool file = false;
  /// Directories to make before, parents first (`target` last unless
  /// `file`).
  const char* const* dirs = nullptr;
  size_t ndirs = 0;
  /// A writable directory of the session: with ids of its own, an
  /// id-mapped mount the node makes once the init's user namespace exists.
  bool idmap = false;
  /// The cloned (or given) detached mount of a bind: the node's (inherited
  /// by the init, or sent to it for `idmap`), or else the init's.
  int tree = -1;
};

/// A plan and the strings it points to.
struct view_plan {
  std::deque<std::string> strings;
  std::deque<std::vector<const char*>> dirs;
  std::vector<view_mount> mounts;
};

/// The default size of the private /tmp and /dev/shm each
/// (`isolation_limits::tmp_size` 0).
constexpr uint64_t default_tmp_size = uint64_t{1} << 30;

/// The host paths below /etc that the view hides: secrets a command has no
/// business reading (`/etc/shadow`, `/etc/sudoers`, host SSH keys, ...).
/// The SSH host keys are listed once per process. A session denies them
/// (`containment::denied_paths`): they are covered, and a read reported,
/// like any denied path.
const std::vector<std::string>& etc_secrets();

/// Plans the view of `spec` (docs/security.md lists what is in it).
/// With `own_ids` (the init is not the node's uid), a denied directory
/// outside the view that holds one of the session's is not covered unless
/// the node's FUSE cover (which shows the session's directories) covers
/// it.
void plan_view(const containment_spec& spec, view_plan& out,
               bool own_ids = false);

/// Builds the session's root from `mounts` and pivots into it, in the
/// session's init before its exec (system calls only); the host's tree is
/// gone from the namespace afterwards. -errno with `stage` (`init_stage`,
/// session_init.hpp) set on failure.
long build_view(view_mount* mounts, size_t n, int& stage);

} // namespace sandbox::detail
