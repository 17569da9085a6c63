#include "sandbox/process/terminator.hpp"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/log.hpp"

namespace sandbox {

namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

/// The state of one staged stop; owned by the chain of timer callbacks.
struct termination : std::enable_shared_from_this<termination> {
  termination(reactor& r, std::shared_ptr<reaper> reap, tree_query q,
              std::vector<pid_t> own, stop_plan p,
              std::function<void(stop_receipt)> f)
    : timer(r.context()),
      reap(std::move(reap)),
      query(std::move(q)),
      own(own.begin(), own.end()),
      plan(p),
      done(std::move(f)) {
  }

  asio::steady_timer timer;
  std::shared_ptr<reaper> reap;
  tree_query query;
  std::set<pid_t> own;
  stop_plan plan;
  std::function<void(stop_receipt)> done;
  /// Every process seen alive during the stop.
  std::set<pid_t> seen;
  std::set<pid_t> killed;
  clock::time_point deadline;
  /// Rounds of waiting in the current stage: the first waits are short
  /// (processes usually end within a millisecond of the signal), then
  /// they double up to `plan.poll`.
  int rounds = 0;

  /// The wait before the next check: 250 µs, doubling, at most `plan.poll`.
  std::chrono::microseconds next_wait() {
    auto wait = std::chrono::microseconds{250L << std::min(rounds++, 8)};
    return std::min<std::chrono::microseconds>(wait, plan.poll);
  }

  bool cgroup_mode() const noexcept {
    return !query.cgroup.empty();
  }

  /// Cgroup mode: whether the tree still holds a live process. A cgroup
  /// that is gone holds none; one that cannot be read is assumed to hold
  /// some, so that the receipt never claims what was not seen.
  bool populated() {
    auto p = cgroup_populated(query.cgroup);
    if (p)
      return *p;
    return p.error().code != errc::path_not_found;
  }

  /// The directory of `query.cgroup_keep` (empty: none).
  std::string kept() const {
    return query.cgroup_keep.empty() ? std::string{}
                                     : query.cgroup + "/" + query.cgroup_keep;
  }

  /// Cgroup mode: whether the tree holds a live process outside the kept
  /// directory (each other child, and the directory itself).
  bool others_populated() {
    if (!populated())
      return false;
    if (query.cgroup_keep.empty())
      return true;
    std::error_code ec;
    for (auto& e : std::filesystem::directory_iterator{query.cgroup, ec}) {
      if (!e.is_directory(ec) || e.path().filename() == query.cgroup_keep)
        continue;
      auto p = cgroup_populated(e.path().string());
      if (p ? *p : p.error().code != errc::path_not_found)
        return true;
    }
    // Not a stream: libstdc++ throws when a read fails (the cgroup went
    // between the open and the read: ENODEV).
    std::string procs;
    return read_small_file(query.cgroup + "/cgroup.procs", procs)
           && !procs.empty();
  }

  std::vector<pid_t> members() {
    auto found = cgroup_mode() ? cgroup_members(query.cgroup)
                               : find_members(query);
    if (cgroup_mode() && !query.cgroup_keep.empty()) {
      auto keep = cgroup_members(kept());
      found.erase(std::remove_if(found.begin(), found.end(),
                                 [&](pid_t p) {
                                   return std::find(keep.begin(), keep.end(), p)
                                          != keep.end();
                                 }),
                  found.end());
    }
    for (auto pid : found)
      if (seen.insert(pid).second && own.count(pid) == 0 && reap)
        reap->track_pid(pid);
    return found;
  }

  void signal_all(const std::vector<pid_t>& pids, int sig) {
    if (!cgroup_mode())
      for (auto pgid : query.groups)
        ::kill(-pgid, sig);
    for (auto pid : pids)
      ::kill(pid, sig);
  }

  void start() {
    auto pids = members();
    if (cgroup_mode() ? !others_populated() : pids.empty())
      return end_kept();
    log::logger()->debug("{} stop: signal {} to {} process(es)", query.log_tag,
                         plan.first, pids.size());
    signal_all(pids, plan.first);
    // A stopped process (SIGSTOP, SIGTSTP) cannot act on the signal until
    // it runs again; without this it would always cost the whole grace.
    signal_all(pids, SIGCONT);
    deadline = clock::now() + plan.grace;
    poll(false);
  }

  /// One round of waiting: stop when nothing is left; at the deadline,
  /// escalate to SIGKILL (grace stage) or count survivors (kill stage).
  void poll(bool killing) {
    timer.expires_after(next_wait());
    timer.async_wait(
      [self = shared_from_this(), killing](boost::system::error_code) {
        if (self->cgroup_mode())
          self->poll_cgroup(killing);
        else
          self->poll_processes(killing);
      });
  }

  void poll_processes(bool killing) {
    auto pids = members();
    if (reap)
      reap->reap_now();
    if (pids.empty())
      return finish(0);
    auto expired = clock::now() >= deadline;
    if (killing && expired)
      return finish(static_cast<uint32_t>(pids.size()));
    if (!killing && !expired)
      return poll(false);
    // Entering the kill stage, or catching what was forked since the
    // last round: SIGKILL whatever is still there.
    killed.insert(pids.begin(), pids.end());
    if (!killing)
      log_kill_stage(pids.size());
    signal_all(pids, SIGKILL);
    if (!killing) {
      deadline = clock::now() + plan.verify;
      rounds = 0;
    }
    poll(true);
  }

  /// The kernel keeps the count: `populated 0` is the proof, `cgroup.kill`
  /// the kill stage (forks racing it are killed too). Zombies of members
  /// re-parented to the node are the reaper's (its SIGCHLD scan).
  void poll_cgroup(bool killing) {
    if (killing && !populated())
      return finish(0);
    if (!killing && !others_populated())
      return end_kept();
    auto expired = clock::now() >= deadline;
    if (killing && expired) {
      auto left = members();
      return finish(static_cast<uint32_t>(std::max<size_t>(left.size(), 1)));
    }
    if (!killing && !expired)
      return poll(false);
    if (!killing) {
      auto pids = members();
      killed.insert(pids.begin(), pids.end());
      deadline = clock::now() + plan.verify;
      rounds = 0;
      log_kill_stage(pids.size());
    }
    if (auto ok = cgroup_kill(query.cgroup); !ok)
      log::logger()->warn("{} stop: {}", query.log_tag, ok.error().message);
    poll(true);
  }

  /// Everything else has ended: the kept directory's processes are
  /// killed, and the stop ends when the tree is empty.
  void end_kept() {
    if (!cgroup_mode() || query.cgroup_keep.empty() || !populated())
      return finish(0);
    if (auto ok = cgroup_kill(kept()); !ok)
      log::logger()->warn("{} stop: {}", query.log_tag, ok.error().message);
    deadline = clock::now() + plan.verify;
    rounds = 0;
    poll_kept();
  }

  void poll_kept() {
    timer.expires_after(next_wait());
    timer.async_wait([self = shared_from_this()](boost::system::error_code) {
      if (!self->populated())
        return self->finish(0);
      if (clock::now() >= self->deadline)
        return self->finish(static_cast<uint32_t>(
          std::max<size_t>(cgroup_members(self->query.cgroup).size(), 1)));
      self->poll_kept();
    });
  }

  void log_kill_stage(size_t alive) {
    log::logger()->debug("{} stop: kill stage, SIGKILL to {} process(es) "
                         "alive after {} ms",
                         query.log_tag, alive, plan.grace.count());
  }

  void finish(uint32_t survivors) {
    stop_receipt receipt;
    receipt.ended = static_cast<uint32_t>(seen.size());
    receipt.killed = static_cast<uint32_t>(killed.size());
    receipt.survivors = survivors;
    receipt.mode = cgroup_mode() ? containment_mode::cgroup
                                 : containment_mode::process_group;
    // An empty tree's cgroups go (a cgroup that still holds a process
    // cannot be removed, and must not be).
    if (cgroup_mode() && survivors == 0) {
      if (auto ok = cgroup_remove(query.cgroup); !ok)
        log::logger()->debug("{} stop: {}", query.log_tag, ok.error().message);
      else
        cgroup_tree::prune(query.cgroup);
    }
    log::logger()->debug("{} stop: done, {} ended, {} killed, {} survivors",
                         query.log_tag, receipt.ended, receipt.killed,
                         survivors);
    if (done)
      done(receipt);
  }
};

} // namespace

void async_terminate(reactor& r, std::shared_ptr<reaper> reap, tree_query query,
                     std::vector<pid_t> own_children, stop_plan plan,
                     std::function<void(stop_receipt)> done) {
  auto t = std::make_shared<termination>(r, std::move(reap), std::move(query),
                                         std::move(own_children), plan,
                                         std::move(done));
  asio::post(r.context(), [t] { t->start(); });
}

} // namespace sandbox
