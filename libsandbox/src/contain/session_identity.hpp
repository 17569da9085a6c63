#pragma once

// The identity of a contained session (docs/security.md, "Identity"): on a
// node that may write any uid map (CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN
// in the initial user namespace, as root), the session's root is a host uid
// and gid S of its own, taken from a configured range while the session
// lives; its writable directories are id-mapped mounts that show the node's
// files as the session's and write the session's files as the node's.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox::detail {

/// Whether this process may give sessions ids of their own: it is uid 0 of
/// the initial user namespace with CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN
/// effective. Empty when it may, else why not.
std::string why_no_own_ids();

/// A host uid (and the gid of the same number) held by one session of this
/// process until destroyed; no other node of the machine holds it
/// meanwhile (a lock on its byte of /run/sandbox-session-ids.lock, which
/// the kernel releases when the node ends, however it ends).
class id_lease {
public:
  /// The first free id of [base, base + count) from a start that differs
  /// between processes. Errors: `unsupported` when every id of the range is
  /// held (naming the range), `invalid_argument` for an empty range or one
  /// past 2^32 - 2.
  static result<std::shared_ptr<id_lease>> take(uint32_t base, uint32_t count);

  ~id_lease();

  id_lease(const id_lease&) = delete;
  id_lease& operator=(const id_lease&) = delete;

  uint32_t id() const noexcept {
    return id_;
  }

private:
  explicit id_lease(uint32_t id) : id_(id) {
  }

  uint32_t id_;
};

/// A detached clone of the host's tree at `path` (with its submounts) whose
/// ids are mapped through `userns` (MOUNT_ATTR_IDMAP) and which carries the
/// mount attributes `attr`. Errors: `unsupported` naming the path and its
/// file system when that file system has no id-mapped mounts, `io_error`
/// naming the path otherwise.
result<unique_fd> idmapped_tree(const char* path, uint64_t attr, int userns);

/// A detached clone of the host's tree at `path` (recursive: with its
/// submounts) with the mount attributes `attr`. Errors: `io_error` naming
/// the path.
result<unique_fd> cloned_tree(const char* path, uint64_t attr, bool recursive);

/// Writes "deny" to /proc/`pid`/setgroups and the map "0 `id` 1" to its
/// uid_map and gid_map. Errors: `unsupported` naming the file.
result<void> write_id_maps(pid_t pid, uint32_t id);

} // namespace sandbox::detail
