#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_set>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "sandbox/errc.hpp"
#include "sandbox/io/reactor.hpp"
#include "sandbox/process/child_process.hpp"

namespace sandbox {

/// What a reaper does besides keeping the registry of launched children.
struct reaper_options {
  /// Reap every zombie child that is not one of our own launched children
  /// (right for a process that is only a node, such as the CLI or `serve`);
  /// without it, only registered ones are (`track_pid`, `track_group`).
  bool reap_all_orphans = false;
  /// Make the process a child subreaper (PR_SET_CHILD_SUBREAPER), so that
  /// orphaned descendants are re-parented to it instead of init, and watch
  /// SIGCHLD to reap them. The SIGCHLD handler is installed with
  /// SA_RESTART (a blocking call of another thread is not interrupted).
  /// When the last reaper with this option goes, the subreaper flag and the
  /// SIGCHLD disposition that the process had before the first one are
  /// restored. Off: the process's dispositions and its orphan handling are
  /// left alone (orphans go to init); `reap_now` still reaps registered
  /// zombies that are children of this process.
  bool subreaper = false;
};

/// Reaps the descendants re-parented to the node, without stealing the exit
/// status of processes that a host application embedding the library
/// started itself: only zombies that were registered as ours (`track_pid`)
/// or that belong to a registered process group (`track_group`) are reaped,
/// unless `reap_all_orphans`. Registers the process group of every child
/// launched through `launch_owned` with the process's `watchdog`. Thread-safe.
class reaper : public std::enable_shared_from_this<reaper> {
public:
  /// Starts a reaper on `r` with `opts`. The reactor's handlers hold the
  /// reaper only weakly: it may go away while one of them is queued, and
  /// one that runs keeps it alive until it returns.
  static std::shared_ptr<reaper> make(reactor& r, reaper_options opts = {});

  ~reaper();

  reaper(const reaper&) = delete;
  reaper& operator=(const reaper&) = delete;

  /// Runs `launch` (typically a call of `child_process::start`) under the
  /// reaper's lock and registers the child it started as owned by its
  /// launcher: `reap_now` never steals its exit status. The child is
  /// released again when its `child_process` reaps it (its exit watch or
  /// its destructor), so the registry holds only children that are not
  /// reaped yet. The registry is process-wide: several nodes in one process
  /// never steal each other's children. The child's process group is
  /// watched by the `watchdog` (one record) unless `watch_group` is false
  /// (a child born in a cgroup the watchdog watches already); it is
  /// forgotten again once the group is found empty.
  /// @returns what `launch` returns.
  static result<std::shared_ptr<child_process>> launch_owned(
    const std::function<result<std::shared_ptr<child_process>>()>& launch,
    bool watch_group = true);

  /// The launcher of `pid` has reaped it: forgets one registration of
  /// `pid` (and, if `launch_owned` watched its group, tells the watchdog
  /// when the group has no member left). Called by `child_process`; a
  /// registration made for a new child that reuses the pid in the
  /// meantime is kept.
  static void release_owned(pid_t pid, bool group_watched);

  /// Returns how many launched children are registered as owned and not
  /// reaped yet, in the whole process.
  static size_t owned_count();

  /// Registers a descendant whose zombie, once re-parented to us, is ours.
  void track_pid(pid_t pid);

  /// Registers a process group (one of our children's) whose members are
  /// ours; used when the group outlives its leader.
  void track_group(pid_t pgid);

  /// Registers process group `pgid` (`track_group`) and, on the reactor,
  /// reaps the zombies of it re-parented to this process (`reap_now`):
  /// the caller (an actor) neither waits for it nor blocks launches.
  void collect_group(pid_t pgid);

  /// Reaps every registered zombie child now and forgets groups that have
  /// no member left. Returns how many zombies were reaped. Only a
  /// subreaper process (PR_GET_CHILD_SUBREAPER, ours or the host's) gets
  /// orphans: anywhere else it reaps nothing. It asks the kernel for
  /// zombie children (`waitid` with WNOWAIT, of every registered pid and
  /// group, or of any pid with `reap_all_orphans`) and holds the launch
  /// gate alone only around the reap of one it found, so that it never
  /// takes a child launched but not registered yet.
  size_t reap_now();

  /// Returns how many pids and process groups are registered with
  /// `track_pid` and `track_group` and not forgotten yet.
  size_t tracked() const;

  /// Minimum time between two SIGCHLD-triggered scans for zombies.
  static constexpr std::chrono::milliseconds scan_interval{50};

private:
  explicit reaper(reactor& r, reaper_options opts);

  void wait_signal();
  void schedule_scan();
  /// Reaps zombie child `pid` unless a launcher owns it; false when it
  /// did not (owned, or gone).
  bool reap_one(pid_t pid);

  static std::mutex& own_mutex();
  /// A multiset: a pid reused by a new child while its previous owner has
  /// yet to release it is registered twice, and one release keeps the new
  /// registration.
  static std::unordered_multiset<pid_t>& own_set();

  mutable std::mutex mtx_;
  bool reap_all_;
  bool subreaper_;
  std::unordered_set<pid_t> pids_;
  std::unordered_set<pid_t> groups_;
  /// Everything below runs on this strand.
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer timer_;
  bool scan_pending_ = false;
  std::chrono::steady_clock::time_point last_scan_;
};

} // namespace sandbox
