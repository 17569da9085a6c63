// Scenarios 8 and 9: the lifecycle of sessions.
//
// 8: create N sessions (each answers `info` once, so it is up), measure the
// resident memory they add, then stop them; the baseline does the same with
// bare CAF actors that answer one request, the floor any actor-based
// session pays.
// 9: stop a session with 256 running children and time the stop request
// until its receipt (which arrives once every child is reaped); the
// baseline signals the same children directly and reaps them with waitpid,
// applying the same SIGTERM, grace, SIGKILL plan.

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "bench.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/client/embedded_node.hpp"

namespace sandbox::bench {

namespace {

// -- scenario 8 ---------------------------------------------------------------

/// What creating and stopping `n` things cost.
/// Memory and threads of the node at one moment.
struct footprint {
  uint64_t rss = resident_bytes();
  uint64_t heap = heap_in_use();
  size_t threads = thread_count();
};

struct lifecycle {
  double create_seconds = 0;
  double stop_seconds = 0;
  uint64_t rss_growth = 0;
  uint64_t heap_growth = 0;
  size_t threads_added = 0;

  /// Records how much memory and how many threads appeared since `before`.
  void record_growth(const footprint& before);

  /// The larger of the two views, so reuse of freed memory cannot hide
  /// what the things cost.
  double kib_each(size_t n) const {
    return static_cast<double>(std::max(rss_growth, heap_growth)) / 1024
           / static_cast<double>(n);
  }

  double rate(size_t n) const {
    return static_cast<double>(n) / (create_seconds + stop_seconds);
  }
};

void lifecycle::record_growth(const footprint& before) {
  footprint after;
  auto growth = [](auto now, auto then) { return now > then ? now - then : 0; };
  rss_growth = growth(after.rss, before.rss);
  heap_growth = growth(after.heap, before.heap);
  threads_added = growth(after.threads, before.threads);
}

caf::behavior echo_actor(caf::event_based_actor*) {
  return {[](int32_t x) { return x; }};
}

lifecycle bare_actors(caf::actor_system& sys, size_t n) {
  caf::scoped_actor self{sys};
  std::vector<caf::actor> actors;
  actors.reserve(n);
  lifecycle out;
  footprint before;
  auto start = clock::now();
  for (size_t i = 0; i < n; ++i) {
    actors.push_back(sys.spawn(echo_actor));
    self->request(actors.back(), caf::infinite, int32_t{1})
      .receive([](int32_t) {},
               [](caf::error& err) {
                 throw std::runtime_error("bare actor: " + to_string(err));
               });
  }
  out.create_seconds = seconds_since(start);
  out.record_growth(before);
  start = clock::now();
  for (auto& a : actors) {
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::user_shutdown);
    self->receive([](caf::down_msg&) {});
  }
  out.stop_seconds = seconds_since(start);
  return out;
}

lifecycle sessions(actors::embedded_node& node, const options& opt,
                   const std::string& prefix, size_t n) {
  std::vector<actors::blocking_session> live;
  live.reserve(n);
  lifecycle out;
  footprint before;
  auto start = clock::now();
  for (size_t i = 0; i < n; ++i) {
    live.push_back(make_session(node, opt, fmt::format("{}{}", prefix, i)));
    if (!live.back().info())
      throw std::runtime_error("a new session does not answer info");
  }
  out.create_seconds = seconds_since(start);
  out.record_growth(before);
  start = clock::now();
  for (auto& s : live)
    stop_session(s);
  out.stop_seconds = seconds_since(start);
  return out;
}

// -- scenario 9 ---------------------------------------------------------------

/// The children of scenario 9: each says it is ready with a file (after
/// installing its SIGTERM disposition), then sleeps.
std::string child_command(const std::string& dir, bool ignore_term) {
  return fmt::format("{}: > {}/ready.$$; exec sleep 600",
                     ignore_term ? "trap '' TERM; " : "", sh_quote(dir));
}

size_t ready_count(const std::string& dir) {
  size_t n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d))
      if (std::strncmp(e->d_name, "ready.", 6) == 0)
        ++n;
    ::closedir(d);
  }
  return n;
}

void wait_ready(const std::string& dir, size_t n) {
  auto deadline = clock::now() + std::chrono::seconds{60};
  while (ready_count(dir) < n) {
    if (clock::now() > deadline)
      throw std::runtime_error(
        fmt::format("only {} of {} children ready", ready_count(dir), n));
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
}

/// The baseline: signal every group, reap with waitpid, SIGKILL what is
/// left after the grace. Returns milliseconds from the first signal to the
/// last reap.
double raw_stop(const options& opt, const std::string& dir, bool ignore) {
  if (!make_dirs(dir))
    throw std::runtime_error("cannot create " + dir);
  std::set<pid_t> left;
  auto cmd = child_command(dir, ignore);
  for (size_t i = 0; i < opt.stop_children; ++i) {
    auto pid = raw_spawn({"/bin/sh", "-c", cmd}, -1, true);
    if (pid < 0)
      throw std::runtime_error("cannot spawn a baseline child");
    left.insert(pid);
  }
  wait_ready(dir, opt.stop_children);
  auto start = clock::now();
  for (auto pid : left)
    ::kill(-pid, SIGTERM);
  auto deadline = start + opt.grace;
  bool killed = false;
  while (!left.empty()) {
    int status = 0;
    auto pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      left.erase(pid);
      continue;
    }
    if (pid < 0 && errno == ECHILD)
      break;
    if (!killed && clock::now() >= deadline) {
      for (auto p : left)
        ::kill(-p, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::microseconds{500});
  }
  return ms_between(start, clock::now());
}

struct stop_result {
  double ms = 0;
  stop_receipt receipt;
  size_t alive_after = 0;
};

stop_result ours_stop(actors::embedded_node& node, const options& opt,
                      const std::string& name, bool ignore) {
  auto s = make_session(node, opt, name);
  auto dir = session_config_for(opt, name).working_directory;
  auto cmd = child_command(dir, ignore);
  std::vector<actors::blocking_process> children;
  for (size_t i = 0; i < opt.stop_children; ++i) {
    auto p = s.spawn(cmd);
    if (!p)
      throw std::runtime_error("spawn failed: " + p.error().message);
    children.push_back(std::move(*p));
  }
  wait_ready(dir, opt.stop_children);
  stop_result out;
  auto start = clock::now();
  out.receipt = stop_session(s);
  out.ms = ms_between(start, clock::now());
  for (auto& c : children)
    if (::kill(c.pid(), 0) == 0)
      ++out.alive_after;
  return out;
}

/// Milliseconds per session of create, `true` once, stop, in the
/// containment mode `mode` (the cgroup mode makes the session's cgroups at
/// the first execution and removes them at the stop).
double first_exec_ms(const options& opt, actors::containment_choice mode,
                     const std::string& prefix, size_t n) {
  auto cfg = node_config(opt);
  cfg.containment = mode;
  actors::embedded_node node{cfg};
  auto round = [&](const std::string& name) {
    auto s = make_session(node, opt, name);
    auto r = s.execute("true");
    if (!r || r->exit_code != 0)
      throw std::runtime_error("true failed in a new session");
    stop_session(s);
  };
  for (size_t i = 0; i < 20; ++i)
    round(fmt::format("{}/warm{}", prefix, i));
  auto start = clock::now();
  for (size_t i = 0; i < n; ++i)
    round(fmt::format("{}/s{}", prefix, i));
  return ms_between(start, clock::now()) / static_cast<double>(n);
}

/// Whether this host gives the cgroup mode.
bool cgroup_mode_available() {
  return cgroup_tree::create().has_value();
}

} // namespace

std::vector<row> run_sessions(const options& opt) {
  const size_t n = opt.sessions;
  lifecycle bare;
  lifecycle ours;
  {
    actors::embedded_node node{node_config(opt)};
    // Warm-up: the scheduler, the allocator's arenas, CAF's registries.
    bare_actors(node.system(), 50);
    sessions(node, opt, "sessions/warm", 50);
    bare = bare_actors(node.system(), n);
    ours = sessions(node, opt, "sessions/s", n);
  }
  remove_tree(opt.scratch + "/sessions");
  std::vector<row> rows;
  row r;
  r.scenario = 8;
  r.key = "session_rate";
  r.label = fmt::format("session create+stop, {} sessions", n);
  r.unit = "sessions/s";
  r.ours = ours.rate(n);
  r.baseline = bare.rate(n);
  r.note = fmt::format("create {:.0f}/s, stop {:.0f}/s; baseline: bare "
                       "CAF actors",
                       static_cast<double>(n) / ours.create_seconds,
                       static_cast<double>(n) / ours.stop_seconds);
  rows.push_back(std::move(r));
  row m;
  m.scenario = 8;
  m.key = "session_mem";
  m.label = "memory per idle session";
  m.unit = "KiB";
  m.ours = ours.kib_each(n);
  m.baseline = bare.kib_each(n);
  m.goal = "<= 64 KiB";
  m.result = judge(m.ours <= 64);
  auto per = [n](uint64_t bytes) {
    return static_cast<double>(bytes) / 1024 / static_cast<double>(n);
  };
  m.note = fmt::format("max(RSS, heap) delta / N: RSS {:.1f}, heap {:.1f} "
                       "KiB; {:.2f} threads per session",
                       per(ours.rss_growth), per(ours.heap_growth),
                       static_cast<double>(ours.threads_added)
                         / static_cast<double>(n));
  rows.push_back(std::move(m));
  if (cgroup_mode_available()) {
    auto k = std::max<size_t>(n / 5, 20);
    auto pg = first_exec_ms(opt, actors::containment_choice::process_group,
                            "sessions/pg", k);
    auto cg = first_exec_ms(opt, actors::containment_choice::cgroup,
                            "sessions/cg", k);
    remove_tree(opt.scratch + "/sessions");
    row c;
    c.scenario = 8;
    c.key = "session_cgroup";
    c.label = "session create+`true`+stop, cgroup vs pgroup";
    c.unit = "ms";
    c.ours = cg;
    c.baseline = pg;
    c.goal = "<= baseline + 2 ms";
    c.result = judge(cg <= pg + 2.0);
    c.note = fmt::format("{} sessions each; the cgroup mode adds {:.3f} ms "
                         "(mkdir of the session's and execution's cgroups, "
                         "rmdir at reap and stop)",
                         k, cg - pg);
    rows.push_back(std::move(c));
  }
  return rows;
}

std::vector<row> run_stop(const options& opt) {
  auto raw_term = raw_stop(opt, opt.scratch + "/stop/raw-term", false);
  auto raw_ignore = raw_stop(opt, opt.scratch + "/stop/raw-ignore", true);
  stop_result term;
  stop_result ignore;
  std::optional<stop_result> pg_term;
  {
    actors::embedded_node node{node_config(opt)};
    term = ours_stop(node, opt, "stop/term", false);
    ignore = ours_stop(node, opt, "stop/ignore", true);
  }
  // The same stop in the other containment mode, when the first one was
  // the cgroup mode.
  if (term.receipt.mode == containment_mode::cgroup) {
    auto cfg = node_config(opt);
    cfg.containment = actors::containment_choice::process_group;
    actors::embedded_node node{cfg};
    pg_term = ours_stop(node, opt, "stop/pg-term", false);
  }
  remove_tree(opt.scratch + "/stop");
  auto grace_ms = static_cast<double>(opt.grace.count());
  auto note = [](const stop_result& s) {
    return fmt::format("receipt: ended {}, killed {}, survivors {} ({}); "
                       "alive after: {}",
                       s.receipt.ended, s.receipt.killed, s.receipt.survivors,
                       to_string(s.receipt.mode), s.alive_after);
  };
  std::vector<row> rows;
  row t;
  t.scenario = 9;
  t.key = "stop_term";
  t.label = fmt::format("stop {} children, exit on SIGTERM", opt.stop_children);
  t.unit = "ms";
  t.ours = term.ms;
  t.baseline = raw_term;
  t.goal = "<= 100 ms";
  t.result = judge(term.ms <= 100 && term.receipt.survivors == 0
                   && term.alive_after == 0);
  t.note = note(term);
  rows.push_back(std::move(t));
  row g;
  g.scenario = 9;
  g.key = "stop_ignore";
  g.label = fmt::format("stop {} children, ignore SIGTERM", opt.stop_children);
  g.unit = "ms";
  g.ours = ignore.ms;
  g.baseline = raw_ignore;
  g.goal = fmt::format("<= 100 ms + grace ({:g} ms)", grace_ms);
  g.result = judge(ignore.ms <= 100 + grace_ms && ignore.receipt.survivors == 0
                   && ignore.alive_after == 0);
  g.note = note(ignore);
  rows.push_back(std::move(g));
  if (pg_term) {
    row c;
    c.scenario = 9;
    c.key = "stop_cgroup";
    c.label = fmt::format("stop {} children, cgroup vs pgroup",
                          opt.stop_children);
    c.unit = "ms";
    c.ours = term.ms;
    c.baseline = pg_term->ms;
    c.note = "exit on SIGTERM; baseline: the process-group mode, "
             + note(*pg_term);
    rows.push_back(std::move(c));
  }
  return rows;
}

} // namespace sandbox::bench
