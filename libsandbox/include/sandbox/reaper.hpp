#pragma once

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <unordered_set>

#include <boost/asio/signal_set.hpp>

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
  explicit reaper(reactor& r);

  ~reaper();

  reaper(const reaper&) = delete;
  reaper& operator=(const reaper&) = delete;

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

private:
  void wait_signal();

  mutable std::mutex mtx_;
  std::unordered_set<pid_t> pids_;
  std::unordered_set<pid_t> groups_;
  boost::asio::signal_set signals_;
};

} // namespace sandbox
