// Scenario 12: the scheduler of the node's actor system. The same work
// (`execute("true")` at concurrency 1 and 8, and a bare session round trip,
// `info()`, at concurrency 1) on nodes that differ only in CAF's scheduler:
//
// - baseline: CAF 0.17's own defaults (work stealing, max(4, cores)
//   workers), what `embedded_node` used before it took a scheduler config;
// - `sharing`, one worker per core: the node's default until 2026-12-04;
// - `handoff`, one worker per core: `sharing` with a hand-off slot per
//   worker (actors/src/handoff_policy.hpp), the node's
//   default now;
// - `stealing`, one worker per core;
// - `stealing`, one worker per core, with polls tuned down: fewer steal
//   attempts before a worker sleeps, and longer sleeps.
//
// Each configuration runs in 2 rounds (forward, then backward order), so a
// burst of load from elsewhere weighs on all of them; a configuration's
// rate is its operations over its time in both rounds. One node exists at
// a time (each reaps every orphan of the process).

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "bench.hpp"
#include "load_driver.hpp"
#include "sandbox/actors/node.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/client/embedded_node.hpp"

namespace sandbox::bench {

namespace {

using namespace std::chrono_literals;

/// A node on an actor system whose config the benchmark sets key by key
/// (the tuned work-stealing polls are not part of `scheduler_config`).
/// Torn down as `embedded_node` is.
class keyed_node : public actors::basic_node {
public:
  template <class Tune>
  keyed_node(actors::runtime_config rcfg, Tune tune)
    : rt_(actors::make_runtime(std::move(rcfg))) {
    tune(cfg_);
    sys_.emplace(cfg_);
    node_ = actors::spawn_node(*sys_, rt_, {});
  }

  ~keyed_node() override {
    (void) stop_all();
    node_ = nullptr;
    sys_->await_all_actors_done();
    close_actor_gate(*rt_);
  }

  caf::actor_system& system() noexcept override {
    return *sys_;
  }

  const actors::node_actor& node() const noexcept override {
    return node_;
  }

private:
  actors::runtime_ptr rt_;
  actors::system_config cfg_;
  std::optional<caf::actor_system> sys_;
  actors::node_actor node_;
};

size_t cores() {
  return std::max(1u, std::thread::hardware_concurrency());
}

/// One configuration under test.
struct candidate {
  std::string name;
  /// Makes a node with this configuration.
  std::function<std::unique_ptr<actors::basic_node>(const options&)> make;
  load_result exec[2]; // concurrency 1, 8
  load_result info;
};

std::unique_ptr<actors::basic_node>
embedded_with(const options& opt, actors::scheduler_config sched) {
  actors::node_config ncfg;
  ncfg.scheduler = sched;
  return std::make_unique<actors::embedded_node>(node_config(opt), ncfg);
}

std::vector<candidate> candidates() {
  using actors::scheduler_policy;
  using maker = decltype(candidate::make);
  std::vector<candidate> out;
  auto add = [&out](std::string name, maker make) {
    out.emplace_back().name = std::move(name);
    out.back().make = std::move(make);
  };
  add("CAF default (stealing, max(4, cores) workers)", [](const options& opt) {
    return embedded_with(opt, {scheduler_policy::stealing,
                               std::max<size_t>(4, cores())});
  });
  add("sharing, 1 worker per core", [](const options& opt) {
    return embedded_with(opt, {scheduler_policy::sharing, 0});
  });
  add("handoff, 1 worker per core (default)", [](const options& opt) {
    return embedded_with(opt, {scheduler_policy::handoff, 0});
  });
  add("stealing, 1 worker per core", [](const options& opt) {
    return embedded_with(opt, {scheduler_policy::stealing, 0});
  });
  add("stealing, 1 worker per core, tuned polls", [](const options& opt) {
    return std::make_unique<keyed_node>(
      node_config(opt), [](caf::actor_system_config& cfg) {
        actors::configure_scheduler(cfg, {scheduler_policy::stealing, 0});
        // CAF's defaults: 100 aggressive polls, 500 moderate ones 50 us
        // apart, then 10 ms sleeps.
        cfg.set("work-stealing.aggressive-poll-attempts", size_t{10});
        cfg.set("work-stealing.moderate-poll-attempts", size_t{10});
        cfg.set("work-stealing.moderate-sleep-duration", caf::timespan{500us});
      });
  });
  return out;
}

/// One round of `c`: runs the exec phases (concurrency 1 and 8) and the
/// round trips on a fresh node of `cand`.
void measure(candidate& cand, const options& opt, size_t round) {
  const double warmup = opt.quick ? 0.1 : 0.3;
  const double seconds = opt.phase_seconds / 2;
  auto node = cand.make(opt);
  const size_t levels[2] = {1, 8};
  for (size_t l = 0; l < 2; ++l) {
    std::vector<actors::blocking_session> sessions;
    for (size_t i = 0; i < levels[l]; ++i)
      sessions.push_back(make_session(
        *node, opt, fmt::format("sched/r{}-c{}-w{}", round, levels[l], i)));
    auto run = [&](double s, bool record) {
      return drive(levels[l], s, record, [&](size_t w) {
        auto r = sessions[w].execute("true");
        return r && r->exit_code == 0;
      });
    };
    run(warmup, false);
    merge(cand.exec[l], run(seconds, levels[l] == 1));
    if (levels[l] == 1) {
      auto info = [&](double s, bool record) {
        return drive(1, s, record,
                     [&](size_t) { return sessions[0].info().has_value(); });
      };
      info(warmup, false);
      merge(cand.info, info(seconds, true));
    }
    for (auto& s : sessions)
      stop_session(s);
  }
}

row ratio_row(const std::string& key, const std::string& label,
              const std::string& unit, const load_result& ours,
              const load_result& base) {
  row r;
  r.scenario = 12;
  r.key = key;
  r.label = label;
  r.unit = unit;
  r.ours = ours.rate();
  r.baseline = base.rate();
  r.note = exec_note(ours, base, "this", "CAF default");
  return r;
}

} // namespace

std::vector<row> run_scheduler(const options& opt) {
  auto cands = candidates();
  for (size_t round = 0; round < 2; ++round)
    for (size_t i = 0; i < cands.size(); ++i)
      measure(cands[round == 0 ? i : cands.size() - 1 - i], opt, round);
  auto& base = cands[0];
  std::vector<row> rows;
  const char* short_names[] = {"", "sharing", "handoff", "stealing",
                               "stealing_tuned"};
  for (size_t i = 1; i < cands.size(); ++i) {
    auto& c = cands[i];
    for (size_t l = 0; l < 2; ++l) {
      size_t level = l == 0 ? 1 : 8;
      rows.push_back(
        ratio_row(fmt::format("sched_{}_exec_c{}", short_names[i], level),
                  fmt::format("{}: exec `true`, concurrency {}", c.name, level),
                  "exec/s", c.exec[l], base.exec[l]));
    }
    auto rt = ratio_row(fmt::format("sched_{}_info", short_names[i]),
                        fmt::format("{}: session round trip (info)", c.name),
                        "calls/s", c.info, base.info);
    auto [self_us, kids_us] = c.info.cpu_per_op_us();
    auto [base_self_us, base_kids_us] = base.info.cpu_per_op_us();
    (void) kids_us;
    (void) base_kids_us;
    rt.note = fmt::format("CPU/call: this {:.1f} us, CAF default {:.1f} us; "
                          "p50 {:.3f} / {:.3f} ms",
                          self_us, base_self_us,
                          percentile(c.info.latencies_ms, 0.5),
                          percentile(base.info.latencies_ms, 0.5));
    rows.push_back(std::move(rt));
    for (double q : {0.5, 0.99})
      rows.push_back(latency_row(12,
                                 fmt::format("sched_{}_exec", short_names[i]),
                                 c.name + ": exec latency {}, concurrency 1",
                                 c.exec[0], base.exec[0], q));
  }
  return rows;
}

} // namespace sandbox::bench
