#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <unordered_set>

#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "sandbox/reactor.hpp"

namespace sandbox {

/// Makes the node a child subreaper and reaps the descendants re-parented
/// to it, without stealing the exit status of processes that a host
/// application embedding the library started itself: only zombies that were
/// registered as ours (`track_pid`) or that belong to a registered process
/// group (`track_group`) are reaped. Thread-safe.
class reaper {
public:
  /// Sets PR_SET_CHILD_SUBREAPER on this process and watches SIGCHLD on `r`.
  /// With `reap_all_orphans`, every zombie child that is not one of our own
  /// launched children is reaped (right for a process that is only a node,
  /// such as the CLI or `serve`); without it, only registered ones are
  /// (right when a host application has children of its own).
  explicit reaper(reactor& r, bool reap_all_orphans = false);

  ~reaper();

  reaper(const reaper&) = delete;
  reaper& operator=(const reaper&) = delete;

  /// Runs `launch` (which returns the pid of a new direct child, or a value
  /// <= 0 on failure) under the reaper's lock and registers the child as
  /// owned by its launcher: `reap_now` never steals its exit status.
  /// The registry is process-wide: several nodes in one process never
  /// steal each other's children.
  template <class F>
  static auto launch_owned(F launch) -> decltype(launch()) {
    std::lock_guard<std::mutex> guard{own_mutex()};
    auto result = launch();
    if (auto pid = pid_of(result); pid > 0)
      own_set().insert(pid);
    return result;
  }

  /// The launcher of `pid` has reaped it.
  static void release_owned(pid_t pid);

  /// Registers a descendant whose zombie, once re-parented to us, is ours.
  void track_pid(pid_t pid);

  /// Registers a process group (one of our children's) whose members are
  /// ours; used when the group outlives its leader.
  void track_group(pid_t pgid);

  /// Reaps every registered zombie child now and forgets groups that have
  /// no member left. Returns how many zombies were reaped.
  size_t reap_now();

  /// Returns whether anything is registered (for tests).
  size_t tracked() const;

  /// Minimum time between two SIGCHLD-triggered scans of /proc.
  static constexpr std::chrono::milliseconds scan_interval{50};

private:
  void wait_signal();
  void schedule_scan();

  template <class T>
  static pid_t pid_of(const T& x) {
    return x ? (*x)->pid() : 0;
  }

  static std::mutex& own_mutex();
  static std::unordered_set<pid_t>& own_set();

  mutable std::mutex mtx_;
  bool reap_all_;
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
