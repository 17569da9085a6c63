#pragma once

// Judging the paths a watched system call names (syscall_judge.hpp): the
// caller's memory and view read while it waits, and whether the path lies
// in the session's writable places.

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/execution.hpp"

namespace sandbox::detail {

/// What the node answers one watched call: `report` given to the session,
/// then the call continues, or fails with `EPERM` when `refuse`.
struct verdict {
  std::optional<violation> report;
  bool refuse = false;
};

/// Reads `n` bytes of the caller's memory at `addr`.
bool read_memory(pid_t pid, uint64_t addr, void* buf, size_t n);

/// A NUL-terminated string of the caller (at most PATH_MAX bytes).
std::optional<std::string> read_string(pid_t pid, uint64_t addr);

/// An open, create, remove, rename, link or truncate (`n`, an x86-64
/// call): the `write_denied` Landlock will refuse it for, if any. A path
/// that cannot be resolved within `walk_limits` is not reported (the
/// kernel still refuses what Landlock refuses). An open creating a file
/// with a set-uid or set-gid mode is refused (`syscall_denied`).
verdict judge_write(const seccomp_notif& n, const watch_policy& policy);

/// A `bind` of a unix socket to a path, judged as the creation of that
/// path.
std::optional<violation> judge_bind(const seccomp_notif& n,
                                    const watch_policy& policy);

/// Whether `nr` changes the metadata of a file (mode, owner, times,
/// extended attributes).
bool changes_metadata(long nr);

/// A change of metadata (`changes_metadata`): refused (`EPERM`) and
/// reported as `write_denied` ("chmod /path") when its file lies outside
/// the writable places or cannot be resolved; refused and reported as
/// `syscall_denied` ("chmod 04755 /path") when it sets a set-uid or
/// set-gid mode, or sets `security.capability`, wherever the file is.
verdict judge_metadata(const seccomp_notif& n, const watch_policy& policy);

/// A connect or send of `call` to the unix socket `text` (a path, not an
/// abstract name): refused and reported as `connect_denied` ("connect
/// unix:/path") when the socket exists outside the writable places.
verdict judge_unix_peer(pid_t pid, const char* call, const std::string& text,
                        const watch_policy& policy);

} // namespace sandbox::detail
