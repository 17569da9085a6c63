#pragma once

#include <sys/types.h>

#include <string>

namespace sandbox {

/// The process-wide watchdog: a tiny process, started when the first
/// `watchdog::lease` of the process is taken, that ends everything the
/// nodes of this process started if the process dies, by whatever signal
/// (SIGKILL included).
///
/// The node holds one end of a socket pair (close-on-exec, so no child
/// inherits it); the watchdog blocks reading the other end. Every record is
/// one message sent with one call (`watch_group` costs one `send`). When the
/// last lease goes, the node says "bye" and closes its end: the watchdog
/// exits without killing anything. If the node's end closes without "bye",
/// the node died: the watchdog writes "1" to `cgroup.kill` of every watched
/// cgroup directory, sends SIGKILL to every watched process group, and
/// exits.
///
/// The watchdog is not a child of the node (it is started through an
/// intermediate process that exits at once, so it is re-parented to init or
/// to the nearest subreaper above the node): a host application's `waitpid`
/// never sees it. It runs in a session of its own (a Ctrl-C, or a signal to
/// the node's process group, does not reach it), ignores SIGINT, SIGTERM,
/// SIGHUP and SIGQUIT (SIGKILL still ends it), holds no descriptor of the
/// node other than its end of the pair (stdin, stdout and stderr are
/// /dev/null), allocates nothing after it is started, and exits when it
/// cannot read. It drops a watched process group on its own once the group
/// has no member left (it checks every second), so a group id reused by an
/// unrelated process later is not killed.
///
/// Every function is thread-safe; the watch functions do nothing while no
/// lease is held (there is no node to outlive).
class watchdog {
public:
  /// Keeps the watchdog running: the first lease of the process starts it,
  /// the last one to go stops it (after "bye"). A failure to start it is
  /// logged; the node works on, unprotected.
  class lease {
  public:
    lease();
    ~lease();
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
  };

  /// At most this many cgroup directories are watched at a time.
  static constexpr size_t max_cgroups = 32;

  /// On node death, writes "1" to `<dir>/cgroup.kill` (which ends every
  /// process of that cgroup and of its descendants). `dir` is absolute and
  /// shorter than 4000 bytes; a directory watched already is not added
  /// twice. Logs a warning when the table is full or `dir` is unusable.
  /// Returns whether `dir` is watched now (false also when no watchdog
  /// runs).
  static bool watch_cgroup(const std::string& dir);

  /// Stops watching `dir` (it was removed, or the node ended it itself).
  static void forget_cgroup(const std::string& dir);

  /// On node death, sends SIGKILL to the process group `pgid`.
  static void watch_group(pid_t pgid);

  /// Stops watching the process group `pgid` (it has no member left).
  static void forget_group(pid_t pgid);

  /// The watchdog's process id, or 0 when none runs (for tests and logs).
  static pid_t pid();
};

} // namespace sandbox
