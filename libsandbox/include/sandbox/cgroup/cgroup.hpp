#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"

namespace sandbox {

/// The cgroup v2 path in the text of a `/proc/PID/cgroup` (its `0::`
/// line, the last when there are several), as the reader's cgroup
/// namespace sees it; nullopt when there is none. Pure parsing.
std::optional<std::string> cgroup_v2_entry(std::string_view proc_cgroup);

/// Finds the directory of this process's cgroup v2 from the text of
/// `/proc/self/mountinfo` (the cgroup2 mount, with its root) and of
/// `/proc/self/cgroup` (the `0::` line). Pure parsing, no file access.
/// Errors: `unsupported` naming what is missing (no cgroup2 mount, no `0::`
/// line, the own cgroup outside the mounted subtree).
result<std::string> find_own_cgroup(std::string_view mountinfo,
                                    std::string_view proc_cgroup);

/// As above, on this process's own files.
result<std::string> find_own_cgroup();

/// Finds the directory of this process's cgroup in the cgroup v1 hierarchy
/// of `controller` (e.g. "memory"): its line in `proc_cgroup` and the
/// `cgroup` mount whose super options name it. Pure parsing. Errors:
/// `unsupported` naming what is missing.
result<std::string> find_own_cgroup_v1(std::string_view mountinfo,
                                       std::string_view proc_cgroup,
                                       std::string_view controller);

/// As above, on this process's own files.
result<std::string> find_own_cgroup_v1(std::string_view controller);

/// The processes in cgroup `dir` and every cgroup below it (their
/// `cgroup.procs`). Cgroups that vanish while being read are skipped.
std::vector<pid_t> cgroup_members(const std::string& dir);

/// Whether `dir` or a cgroup below it holds a live process (`populated` of
/// its `cgroup.events`). Errors: `io_error` when the file cannot be read
/// (`path_not_found` when the cgroup is gone).
result<bool> cgroup_populated(const std::string& dir);

/// Kills every process of `dir` and of the cgroups below it (writes `1` to
/// its `cgroup.kill`; the kernel also kills what forks meanwhile).
/// Errors: `io_error` with the errno (`path_not_found` if it is gone).
result<void> cgroup_kill(const std::string& dir);

/// Removes `dir` and every cgroup below it, the deepest first. A cgroup
/// already gone is not an error. Errors: `io_error` naming the cgroup that
/// could not be removed (EBUSY: it still holds a process).
result<void> cgroup_remove(const std::string& dir);

/// Kills `dir`'s tree, waits up to `timeout` for it to be empty, then
/// removes it; blocks the caller. For teardown (a node that goes away) and
/// leftovers of a dead node. Errors: those of the steps, or `timeout` when
/// a process is still there after `timeout`.
result<void> cgroup_kill_and_remove(const std::string& dir,
                                    std::chrono::milliseconds timeout);

/// Kills and removes the cgroups `sandbox-<pid>-<starttime>` directly below
/// `own` whose process is gone (a node process that died: its watchdog
/// killed the processes, nobody removed the directories). Those of live
/// processes are left alone. Returns how many were removed.
size_t remove_dead_cgroups(const std::string& own);

/// The empty execution cgroups of one session, kept for its next
/// executions: a directory is made once and used by one execution after
/// another, where a mkdir and an rmdir per execution cost the node about
/// 45 µs of kernel time (and the kernel more, later, in its workers).
/// Executions end on their process actors and start on the session's:
/// thread-safe.
class cgroup_pool {
public:
  /// Keeps at most `cap` idle directories (one per execution the session
  /// runs side by side, up to that many).
  explicit cgroup_pool(size_t cap = 8) : cap_(cap) {
  }

  /// An idle directory, or an empty string when none is kept.
  std::string take();

  /// The execution that ran in `dir` ended and its child was reaped. An
  /// empty `dir` is kept for the next execution, or removed when the pool
  /// is full or closed; one that still holds a process (a descendant left
  /// in the background) is left alone: it is the session's stop that ends
  /// and removes it. A `dir` already gone is forgotten.
  void give_back(const std::string& dir);

  /// The session stops (its stop removes its cgroups): nothing is kept
  /// from now on.
  void close();

  /// How many directories are kept.
  size_t idle() const;

private:
  mutable std::mutex mtx_;
  std::vector<std::string> idle_;
  size_t cap_;
  bool closed_ = false;
};

/// The cgroups of one node: `<own>/sandbox-<pid>-<starttime>/n-<k>/` (the
/// first directory is shared by every node of the process, the second is
/// this node's), per session `s-<id>/` and per execution `s-<id>/e-<n>/`.
/// Directories exist only while needed: made at an execution's launch,
/// removed once empty (a session's at its stop, the node's and the
/// process's with their last session: `prune`). An execution's, once its
/// last process is gone, is kept in its session's `cgroup_pool` for the
/// next execution (removed when the pool is full). Only leaves hold
/// processes, so no controller rule is in the way. The pid and start time
/// name the process across pid reuse: whoever finds a directory of a
/// process that is gone may kill and remove it. Thread-safe (it holds no
/// mutable state).
class cgroup_tree {
public:
  /// Finds the own cgroup and creates the node's directory below it (the
  /// writability check). Errors: `unsupported` naming why the cgroup mode
  /// cannot work here (no cgroup v2, no `cgroup.kill` (Linux < 5.14), not
  /// writable), with the errno where one failed.
  static result<std::unique_ptr<cgroup_tree>> create();

  /// Ends every process still in the node's cgroups and removes them
  /// (waits up to 2 s): nothing of the node's sessions outlives it.
  ~cgroup_tree();

  cgroup_tree(const cgroup_tree&) = delete;
  cgroup_tree& operator=(const cgroup_tree&) = delete;

  /// The node's own cgroup directory, absolute
  /// (`<mount><own>/sandbox-<pid>-<starttime>/n-<k>`).
  const std::string& node_root() const noexcept {
    return root_;
  }

  /// The directory of every node of this process
  /// (`<mount><own>/sandbox-<pid>-<starttime>`).
  const std::string& process_root() const noexcept {
    return process_;
  }

  /// The cgroup the node itself runs in, the parent of `node_root`.
  const std::string& own() const noexcept {
    return own_;
  }

  /// The directory of session `id` (it may not exist yet).
  std::string session_path(std::string_view id) const;

  /// Creates the cgroup of execution `exec` of session `id` (and the
  /// session's on first use); returns its directory. Errors:
  /// `invalid_argument` for an id that is not one path component,
  /// `io_error` with the errno of mkdir.
  result<std::string> make_execution(std::string_view id, uint64_t exec) const;

  /// After the session cgroup `session_dir` was removed: removes the node's
  /// and the process's directories above it if they are empty now. Does
  /// nothing for a path that is not a session's.
  static void prune(const std::string& session_dir);

private:
  cgroup_tree(std::string own, std::string process, std::string root)
    : own_(std::move(own)),
      process_(std::move(process)),
      root_(std::move(root)) {
  }

  std::string own_;
  std::string process_;
  std::string root_;
};

} // namespace sandbox
