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
    // The execute path's goals: 0.8 x raw alone, 0.9 x raw when the
    // node's work overlaps the children's.
    double goal = levels[i] == 1 ? 0.8 : 0.9;
    r.goal = fmt::format(">= {} x raw", goal);
    r.result = judge(r.ratio() >= goal);
    rows.push_back(std::move(r));
  }
  // What the node spends per execution beside what a raw loop spends in
  // its own process (both from getrusage: this process holds the node and
  // the calling thread, as the raw loop holds its spawning thread).
  row cpu;
  cpu.scenario = 1;
  cpu.key = "exec_cpu_c1";
  cpu.label = "CPU per exec `true` of this process, concurrency 1";
  cpu.unit = "us";
  cpu.ours = ours[0].cpu_per_op_us().first;
  cpu.baseline = raw[0].cpu_per_op_us().first;
  cpu.goal = "<= 1.5 x raw";
  cpu.result = judge(cpu.ratio() <= 1.5);
  cpu.note = "getrusage(RUSAGE_SELF): the node and the calling thread; raw: "
             "the posix_spawn + waitpid loop";
  rows.push_back(std::move(cpu));
  for (double q : {0.5, 0.99}) {
    auto r = latency_row(2, "exec", "exec latency {}, concurrency 1", ours[0],
                         raw[0], q);
    if (q > 0.9) {
      r.goal = "<= 1.3 x raw";
      r.result = judge(r.ratio() <= 1.3);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

} // namespace sandbox::bench
