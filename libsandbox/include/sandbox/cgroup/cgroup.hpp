#pragma once

#include <sys/types.h>

#include <atomic>
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
#include "sandbox/unique_fd.hpp"

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

/// How many descriptors a node's sessions may hold open for their
/// execution cgroups (`held_cgroup`, two each) together: beyond it, a
/// cgroup is held by its path alone, so that idle sessions cannot use up
/// the process's descriptors. Thread-safe.
class held_cgroup_budget {
public:
  explicit held_cgroup_budget(size_t descriptors) noexcept
    : left_(static_cast<int64_t>(descriptors)) {
  }

  /// An eighth of this process's descriptor limit (`RLIMIT_NOFILE`), at
  /// most 1024.
  static size_t default_size() noexcept;

  /// Takes `n` descriptors if that many are left.
  bool take(size_t n) noexcept;

  /// Gives back `n` descriptors taken before.
  void give(size_t n) noexcept;

private:
  std::atomic<int64_t> left_;
};

/// An execution cgroup held open while its session keeps it: its
/// directory, which a child is born in (`launch_spec::cgroup_held`), and
/// its `cgroup.events`, read again in place. A launch and a give-back then
/// look nothing up by path (a lookup below /sys/fs/cgroup is one of the
/// dearer steps of a launch). Immutable once open: thread-safe.
class held_cgroup {
public:
  /// Opens cgroup `dir` and its `cgroup.events`, taking two descriptors
  /// of `budget` (null: none counted). Where the budget has none left,
  /// `dir` is held by its path alone (`dir_fd()` is -1; a launch opens the
  /// directory, `populated` reads the file by path). Errors: `io_error`
  /// naming the path (`path_not_found` when the cgroup is gone).
  static result<std::shared_ptr<const held_cgroup>>
  open(std::string dir, std::shared_ptr<held_cgroup_budget> budget = nullptr);

  ~held_cgroup();

  held_cgroup(const held_cgroup&) = delete;
  held_cgroup& operator=(const held_cgroup&) = delete;

  const std::string& path() const noexcept {
    return path_;
  }

  /// The directory, opened `O_DIRECTORY` (for `CLONE_INTO_CGROUP`); -1
  /// when held by its path alone.
  int dir_fd() const noexcept {
    return dir_.get();
  }

  /// As `cgroup_populated`, with one `pread` of the kept `cgroup.events`
  /// (`read_cgroup_file`). Errors: as `cgroup_populated` (a removed
  /// cgroup's kept file fails, and so does its path).
  result<bool> populated() const;

private:
  explicit held_cgroup(std::string path)
    : path_(std::move(path)), events_path_(path_ + "/cgroup.events") {
  }

  std::string path_;
  std::string events_path_;
  unique_fd dir_;
  unique_fd events_;
  /// Where the two descriptors go back; null when none were taken.
  std::shared_ptr<held_cgroup_budget> budget_;
};

/// The empty execution cgroups of one session, kept for its next
/// executions, held open (`held_cgroup`): a directory is made and opened
/// once and used by one execution after another, where a mkdir and an
/// rmdir per execution cost the node about 45 µs of kernel time (and the
/// kernel more, later, in its workers). Executions end on their process
/// actors and start on the session's: thread-safe.
class cgroup_pool {
public:
  /// Keeps at most `cap` idle directories (one per execution the session
  /// runs side by side, up to that many).
  explicit cgroup_pool(size_t cap = 8) : cap_(cap) {
  }

  /// An idle directory, or null when none is kept.
  std::shared_ptr<const held_cgroup> take();

  /// The execution that ran in `dir` ended and its child was reaped. An
  /// empty `dir` is kept for the next execution, or removed when the pool
  /// is full or closed; one that still holds a process (a descendant left
  /// in the background) is left alone: it is the session's stop that ends
  /// and removes it. A `dir` already gone is forgotten. Null: nothing.
  void give_back(std::shared_ptr<const held_cgroup> dir);

  /// The session stops (its stop removes its cgroups): nothing is kept
  /// from now on.
  void close();

  /// How many directories are kept.
  size_t idle() const;

private:
  mutable std::mutex mtx_;
  std::vector<std::shared_ptr<const held_cgroup>> idle_;
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
