// Scenarios 1 and 2: executions of `true` through sessions against raw
// posix_spawn of `/bin/sh -c true` + waitpid, at the same concurrency.
//
// Each worker thread has a session of its own (N agents, one session
// each) and runs `execute("true")` in a loop through the blocking facade.
// The baseline threads call posix_spawn and waitpid directly. Baselines run
// while no node exists, so the node's reaper cannot take their children.

#include <fmt/format.h>

#include <memory>

#include "bench.hpp"
#include "load_driver.hpp"

namespace sandbox::bench {

namespace {

const std::vector<std::string> true_argv{"/bin/sh", "-c", "true"};

bool raw_true(size_t) {
  auto pid = raw_spawn(true_argv);
  return pid > 0 && raw_wait(pid) == 0;
}

/// Runs `true` through `sessions` (one per worker) for `seconds`.
load_result ours_true(std::vector<actors::blocking_session>& sessions,
                      double seconds, bool record) {
  return drive(sessions.size(), seconds, record, [&](size_t w) {
    auto r = sessions[w].execute("true");
    return r && r->exit_code == 0;
  });
}

} // namespace

std::vector<row> run_exec(const options& opt) {
  const std::vector<size_t> levels{1, 8, 64};
  const double warmup = opt.quick ? 0.1 : 0.3;
  std::vector<load_result> raw;
  for (auto c : levels) {
    drive(c, warmup, false, raw_true);
    raw.push_back(drive(c, opt.phase_seconds, c == 1, raw_true));
  }
  std::vector<load_result> ours;
  {
    actors::embedded_node node{node_config(opt)};
    for (auto c : levels) {
      std::vector<actors::blocking_session> sessions;
      for (size_t i = 0; i < c; ++i)
        sessions.push_back(
          make_session(node, opt, fmt::format("exec/c{}-w{}", c, i)));
      ours_true(sessions, warmup, false);
      ours.push_back(ours_true(sessions, opt.phase_seconds, c == 1));
      for (auto& s : sessions)
        stop_session(s);
    }
  }
  std::vector<row> rows;
  for (size_t i = 0; i < levels.size(); ++i) {
    row r;
    r.scenario = 1;
    r.key = fmt::format("exec_c{}", levels[i]);
    r.label = fmt::format("exec `true`, concurrency {}", levels[i]);
    r.unit = "exec/s";
    r.ours = ours[i].rate();
    r.baseline = raw[i].rate();
    r.note = exec_note(ours[i], raw[i]);
    if (levels[i] > 1) {
      r.goal = ">= 0.8 x raw";
      r.result = judge(r.ratio() >= 0.8);
    }
    rows.push_back(std::move(r));
  }
  for (double q : {0.5, 0.99}) {
    rows.push_back(latency_row(2, "exec", "exec latency {}, concurrency 1",
                               ours[0], raw[0], q));
  }
  return rows;
}

} // namespace sandbox::bench
