#include "sandbox/terminator.hpp"

#include <signal.h>

#include <algorithm>
#include <set>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

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

  std::vector<pid_t> members() {
    auto found = find_members(query);
    for (auto pid : found)
      if (seen.insert(pid).second && own.count(pid) == 0 && reap)
        reap->track_pid(pid);
    return found;
  }

  void signal_all(const std::vector<pid_t>& pids, int sig) {
    for (auto pgid : query.groups)
      ::kill(-pgid, sig);
    for (auto pid : pids)
      ::kill(pid, sig);
  }

  void start() {
    auto pids = members();
    if (pids.empty())
      return finish(0);
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
    timer.expires_after(plan.poll);
    timer.async_wait(
      [self = shared_from_this(), killing](boost::system::error_code) {
        auto pids = self->members();
        if (self->reap)
          self->reap->reap_now();
        if (pids.empty())
          return self->finish(0);
        auto expired = clock::now() >= self->deadline;
        if (killing && expired)
          return self->finish(static_cast<uint32_t>(pids.size()));
        if (!killing && !expired)
          return self->poll(false);
        // Entering the kill stage, or catching what was forked since the
        // last round: SIGKILL whatever is still there.
        self->killed.insert(pids.begin(), pids.end());
        self->signal_all(pids, SIGKILL);
        if (!killing)
          self->deadline = clock::now() + self->plan.verify;
        self->poll(true);
      });
  }

  void finish(uint32_t survivors) {
    stop_receipt receipt;
    receipt.ended = static_cast<uint32_t>(seen.size());
    receipt.killed = static_cast<uint32_t>(killed.size());
    receipt.survivors = survivors;
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
