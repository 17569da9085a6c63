#include "sandbox/reaper.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "sandbox/process_tree.hpp"

namespace sandbox {

reaper::reaper(reactor& r, bool reap_all_orphans)
  : reap_all_(reap_all_orphans),
    strand_(boost::asio::make_strand(r.executor())),
    signals_(strand_, SIGCHLD),
    timer_(strand_) {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    spdlog::warn("PR_SET_CHILD_SUBREAPER failed: escaped descendants are "
                 "re-parented to init and cannot be reaped by the node");
}

std::shared_ptr<reaper> reaper::make(reactor& r, bool reap_all_orphans) {
  std::shared_ptr<reaper> result{new reaper(r, reap_all_orphans)};
  result->wait_signal();
  return result;
}

reaper::~reaper() {
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  timer_.cancel();
}

void reaper::wait_signal() {
  // Weak: the owner may drop the reaper while this handler is queued; a
  // handler that runs holds it until it returns.
  signals_.async_wait(
    [weak = weak_from_this()](boost::system::error_code ec, int) {
      auto self = weak.lock();
      if (ec || !self)
        return;
      if (self->reap_all_ || self->tracked() > 0)
        self->schedule_scan();
      self->wait_signal();
    });
}

void reaper::schedule_scan() {
  // A /proc scan costs far more than a child's exit; under load SIGCHLDs
  // arrive by the thousand. Scan at most once per `scan_interval`: an
  // orphan's zombie waits that long at most (our own children are reaped
  // by their launchers at once, never here).
  if (scan_pending_)
    return;
  scan_pending_ = true;
  timer_.expires_at(last_scan_ + scan_interval);
  timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self)
      return;
    self->scan_pending_ = false;
    self->last_scan_ = std::chrono::steady_clock::now();
    self->reap_now();
  });
}

std::mutex& reaper::own_mutex() {
  static std::mutex mtx;
  return mtx;
}

std::unordered_multiset<pid_t>& reaper::own_set() {
  static std::unordered_multiset<pid_t> pids;
  return pids;
}

result<std::shared_ptr<child_process>> reaper::launch_owned(
  const std::function<result<std::shared_ptr<child_process>>()>& launch) {
  std::lock_guard<std::mutex> guard{own_mutex()};
  auto child = launch();
  if (child && (*child)->pid() > 0) {
    own_set().insert((*child)->pid());
    (*child)->owned_ = true;
  }
  return child;
}

void reaper::release_owned(pid_t pid) {
  std::lock_guard<std::mutex> guard{own_mutex()};
  if (auto i = own_set().find(pid); i != own_set().end())
    own_set().erase(i);
}

size_t reaper::owned_count() {
  std::lock_guard<std::mutex> guard{own_mutex()};
  return own_set().size();
}

void reaper::track_pid(pid_t pid) {
  std::lock_guard<std::mutex> guard{mtx_};
  pids_.insert(pid);
}

void reaper::track_group(pid_t pgid) {
  std::lock_guard<std::mutex> guard{mtx_};
  groups_.insert(pgid);
}

size_t reaper::tracked() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return pids_.size() + groups_.size();
}

size_t reaper::reap_now() {
  auto self = ::getpid();
  auto snapshot = proc_snapshot();
  size_t reaped = 0;
  // Lock order: the process-wide registry first, then this reaper's sets.
  std::lock_guard<std::mutex> own_guard{own_mutex()};
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& e : snapshot) {
    if (e.ppid != self || !e.zombie())
      continue;
    if (own_set().count(e.pid) > 0)
      continue;
    if (!reap_all_ && pids_.count(e.pid) == 0 && groups_.count(e.pgid) == 0)
      continue;
    int status = 0;
    if (::waitpid(e.pid, &status, WNOHANG) == e.pid) {
      ++reaped;
      pids_.erase(e.pid);
    }
  }
  // Forget what can no longer produce a zombie of ours.
  for (auto i = pids_.begin(); i != pids_.end();)
    i = ::kill(*i, 0) != 0 && errno == ESRCH ? pids_.erase(i) : std::next(i);
  for (auto i = groups_.begin(); i != groups_.end();)
    i = ::kill(-*i, 0) != 0 && errno == ESRCH ? groups_.erase(i) : std::next(i);
  return reaped;
}

} // namespace sandbox
