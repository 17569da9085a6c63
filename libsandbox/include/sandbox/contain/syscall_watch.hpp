#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/execution.hpp"
#include "sandbox/unique_fd.hpp"

struct sock_fprog;

namespace sandbox {

class reactor;

/// What a command of a contained session may write, to tell which of its
/// system calls Landlock will refuse (docs/security.md, "Violations").
struct watch_policy {
  /// Absolute directories below which writes are allowed: the working
  /// directory, the home, `/tmp` and `/dev/shm`.
  std::vector<std::string> writable;
  /// Tagged onto every violation.
  uint64_t execution = 0;
  /// Landlock scopes the command's signals (ABI 6): a signal to a process
  /// of another execution's cgroup (another execution, the init, a child
  /// not yet executed) is refused, and reported.
  bool scoped_signals = false;
};

/// The threads of a process that judge the watched calls of every
/// contained command (`watch_syscalls`), started at the first one.
constexpr size_t judge_threads = 2;

/// The seccomp filter of a contained session's commands, installed (with
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`) once by the session's launcher,
/// whose commands inherit it, or by each command just before its exec
/// where the session has no launcher: `connect`,
/// `bind`, a `sendto` naming an address, the system calls that
/// write a path (an open for writing, create, make a directory or node,
/// remove, rename, link, truncate), those that change a file's metadata
/// (`chmod`, `chown`, `utime*`, `*setxattr`, `*removexattr` and their
/// `f`, `l` and `at` forms), those that name a process by its pid
/// (signals, `pidfd_open`, `process_vm_*`, a `ptrace` attach) and those
/// the node refuses (`io_uring_setup`, an `ioctl` of `TIOCSTI` or
/// `TIOCLINUX`) notify the listener; everything else runs unwatched. It covers
/// every ABI of an x86-64 process: x86-64, i386 (`int $0x80`, `connect` and
/// `bind` through `socketcall` too) and x32. Built once, by libseccomp; a
/// failure to build it (only running out of memory can cause one) ends the
/// process.
const sock_fprog* watch_filter() noexcept;

/// Watches the notifications of one filter (`listener`: a session's
/// launcher's, or one command's) until every process using the filter has
/// exited: received on `r`, judged on one of the process's
/// `judge_threads` (a listener's calls one at a time, each path walk
/// bounded: detail::walk_limits), so that a slow judgement holds only the
/// session that asked for it. `report` is called on a judge
/// thread, before the judged call returns, with the caller's pid (as the
/// node sees it). The node refuses (`EPERM`):
/// - `io_uring_setup` and the `ioctl` requests `TIOCSTI` (typing into a
///   terminal) and `TIOCLINUX`, reported as `syscall_denied` naming the
///   call (`ioctl TIOCSTI`);
/// - a mode with `S_ISUID` or `S_ISGID` (chmod calls, an open or creat that
///   makes the file) and a `security.capability` attribute set, wherever
///   the file is: `syscall_denied` ("chmod 04755 /w/py");
/// - a change of metadata of a file outside `policy.writable`, or whose
///   path cannot be resolved: `write_denied` naming the call and the path
///   ("chmod /etc/passwd");
/// - a `connect` or `sendto` to a unix socket path that exists
///   outside `policy.writable`: `connect_denied` ("connect unix:/run/x").
///
/// The last two read the path from the caller's memory: another thread of
/// the caller can change it between the judgement and the kernel's own
/// reading. They are a report with a best-effort refusal; the boundary
/// that holds is the kernel's (the session's identity and view).
/// Every other call continues (Landlock and the network namespace refuse),
/// after a report of one they will refuse:
/// - `write_denied`: the path lies outside `policy.writable` (paths below
///   `/dev` and `/proc` are not judged); a `bind` of a unix socket to a
///   path is judged as the creation of that path; a path whose walk passes
///   the limits is not reported;
/// - `connect_denied`: an IPv4 or IPv6 destination that no socket of the
///   session's network namespace listens on (a TCP connect) or that is not
///   loopback (any other);
/// - `signal_denied`: a pid (above 0) that the session's /proc does not
///   show, with the call's name (`kill 4242`).
void watch_syscalls(reactor& r, unique_fd listener,
                    std::shared_ptr<const watch_policy> policy,
                    std::function<void(pid_t, violation)> report);

} // namespace sandbox
