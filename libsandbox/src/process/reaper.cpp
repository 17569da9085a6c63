#include "sandbox/process/reaper.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <shared_mutex>
#include <vector>

#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include "sandbox/log.hpp"

#include "sandbox/process/watchdog.hpp"

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
  // Under load SIGCHLDs arrive by the thousand, and a scan that finds a
  // zombie takes the launch gate alone. Scan at most once per
  // `scan_interval`: an orphan's zombie waits that long at most (our own
  // children are reaped by their launchers at once, never here).
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

namespace {

bool is_subreaper() {
  int flag = 0;
  return ::prctl(PR_GET_CHILD_SUBREAPER, &flag) == 0 && flag != 0;
}

/// A zombie child that `type` and `id` select, left a zombie (WNOWAIT);
/// 0 when there is none.
pid_t peek_zombie(idtype_t type, id_t id) {
  for (;;) {
    siginfo_t si{};
    if (::waitid(type, id, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
      return si.si_pid; // 0: children, but no zombie among them
    if (errno != EINTR)
      return 0; // ECHILD
  }
}

} // namespace

void reaper::collect_group(pid_t pgid) {
  track_group(pgid);
  boost::asio::post(strand_, [weak = weak_from_this()] {
    if (auto self = weak.lock())
      self->reap_now();
  });
}

bool reaper::reap_one(pid_t pid) {
  // Lock order: no launch in progress, the process-wide registry, then
  // this reaper's sets. With the gate held alone every launched child is
  // registered: an owned one is its launcher's to reap.
  std::unique_lock<std::shared_mutex> no_launch{launch_gate()};
  std::lock_guard<std::mutex> own_guard{own_mutex()};
  if (own_set().count(pid) > 0)
    return false;
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid)
    return false;
  std::lock_guard<std::mutex> guard{mtx_};
  pids_.erase(pid);
  return true;
}

size_t reaper::reap_now() {
  size_t reaped = 0;
  if (is_subreaper()) {
    // Every zombie that `type`/`id` selects, until none is left or the
    // next one is a launcher's (it reaps it itself, and the kernel would
    // name that one again).
    auto drain = [&](idtype_t type, id_t id) {
      while (auto pid = peek_zombie(type, id)) {
        if (!reap_one(pid))
          return false;
        ++reaped;
      }
      return true;
    };
    if (reap_all_) {
      // A zombie of a launcher's hides the others from P_ALL until it is
      // reaped: look again after the scan interval.
      if (!drain(P_ALL, 0))
        boost::asio::post(strand_, [weak = weak_from_this()] {
          if (auto self = weak.lock())
            self->schedule_scan();
        });
    } else {
      std::vector<pid_t> pids;
      std::vector<pid_t> groups;
      {
        std::lock_guard<std::mutex> guard{mtx_};
        pids.assign(pids_.begin(), pids_.end());
        groups.assign(groups_.begin(), groups_.end());
      }
      for (auto pid : pids)
        drain(P_PID, static_cast<id_t>(pid));
      for (auto pgid : groups)
        drain(P_PGID, static_cast<id_t>(pgid));
    }
  }
  // Forget what can no longer produce a zombie of ours.
  std::lock_guard<std::mutex> guard{mtx_};
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
