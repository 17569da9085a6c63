#include "sandbox/reaper.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <shared_mutex>

#include <spdlog/spdlog.h>

#include "sandbox/log.hpp"

#include "sandbox/process_tree.hpp"
#include "sandbox/watchdog.hpp"

namespace sandbox {

namespace {

/// What the process had before its first subreaper: restored when the last
/// one goes.
struct subreaper_state {
  std::mutex mtx;
  size_t count = 0;
  int was_subreaper = 0;
  struct sigaction old_chld;
};

subreaper_state& subreapers() {
  static auto* s = new subreaper_state;
  return *s;
}

} // namespace

reaper::reaper(reactor& r, reaper_options opts)
  : reap_all_(opts.reap_all_orphans),
    subreaper_(opts.subreaper),
    strand_(boost::asio::make_strand(r.executor())),
    signals_(strand_),
    timer_(strand_) {
  if (!subreaper_)
    return;
  auto& s = subreapers();
  std::lock_guard<std::mutex> guard{s.mtx};
  if (s.count++ == 0) {
    ::prctl(PR_GET_CHILD_SUBREAPER, &s.was_subreaper);
    ::sigaction(SIGCHLD, nullptr, &s.old_chld);
  }
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    log::logger()->warn(
      "PR_SET_CHILD_SUBREAPER failed: escaped descendants are "
      "re-parented to init and cannot be reaped by the node");
  signals_.add(SIGCHLD);
  // Asio installs its handler without SA_RESTART: a blocking waitpid, read
  // or write of any other thread would fail with EINTR at every SIGCHLD.
  struct sigaction act;
  if (::sigaction(SIGCHLD, nullptr, &act) == 0
      && (act.sa_flags & SA_RESTART) == 0) {
    act.sa_flags |= SA_RESTART;
    ::sigaction(SIGCHLD, &act, nullptr);
  }
}

std::shared_ptr<reaper> reaper::make(reactor& r, reaper_options opts) {
  std::shared_ptr<reaper> result{new reaper(r, opts)};
  if (result->subreaper_)
    result->wait_signal();
  return result;
}

reaper::~reaper() {
  boost::system::error_code ignored;
  timer_.cancel();
  if (!subreaper_)
    return;
  auto& s = subreapers();
  std::lock_guard<std::mutex> guard{s.mtx};
  signals_.clear(ignored);
  if (--s.count == 0) {
    ::sigaction(SIGCHLD, &s.old_chld, nullptr);
    ::prctl(PR_SET_CHILD_SUBREAPER, s.was_subreaper);
  }
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

namespace {

/// Launches hold it shared, side by side; a scan (`reap_now`) holds it
/// alone, so that it never meets a child launched but not registered yet.
std::shared_mutex& launch_gate() {
  static std::shared_mutex gate;
  return gate;
}

} // namespace

result<std::shared_ptr<child_process>> reaper::launch_owned(
  const std::function<result<std::shared_ptr<child_process>>()>& launch,
  bool watch_group) {
  std::shared_lock<std::shared_mutex> launching{launch_gate()};
  auto child = launch();
  if (child && (*child)->pid() > 0) {
    // The registry's own lock is held only for the record: launches do not
    // wait for each other, only a scan waits for them.
    std::lock_guard<std::mutex> guard{own_mutex()};
    own_set().insert((*child)->pid());
    (*child)->owned_ = true;
    // The child leads a process group of its own.
    if (watch_group) {
      (*child)->group_watched_ = true;
      watchdog::watch_group((*child)->pid());
    }
  }
  return child;
}

void reaper::release_owned(pid_t pid, bool group_watched) {
  std::lock_guard<std::mutex> guard{own_mutex()};
  if (auto i = own_set().find(pid); i != own_set().end())
    own_set().erase(i);
  if (!group_watched)
    return;
  // Under the lock: a new child that reuses the id is launched (and
  // watched) either before this check, which then finds its group, or
  // after the record that forgets the old one.
  if (::kill(-pid, 0) != 0 && errno == ESRCH)
    watchdog::forget_group(pid);
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
  // Lock order: no launch in progress, the process-wide registry, then
  // this reaper's sets. The snapshot may be older than a launch that ends
  // meanwhile: its child is registered by the time the gate is ours.
  std::unique_lock<std::shared_mutex> no_launch{launch_gate()};
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
  for (auto i = groups_.begin(); i != groups_.end();) {
    if (::kill(-*i, 0) != 0 && errno == ESRCH) {
      watchdog::forget_group(*i);
      i = groups_.erase(i);
    } else {
      ++i;
    }
  }
  return reaped;
}

} // namespace sandbox
