// sandbox-load: the load generator behind `make bench`.
//
// Runs each scenario of issue 5 for a bounded time, each against a
// baseline measured in the same run, prints one table (ours / baseline,
// goals met or not), writes bench-results/results.csv and renders PNG plots
// with gnuplot. `--quick` is a ~30 s smoke run; `--only NAME` runs some
// groups. See docs/benchmarks.md for the results and how to read them.

#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include "bench.hpp"

namespace sandbox::bench {

namespace {

/// A group of scenarios that share set-up, selectable with `--only`.
struct group {
  std::string name;
  int scenario;
  std::string what;
  scenario_fn run;
};

std::vector<group> all_groups() {
  return {
    {"exec", 1, "exec throughput at concurrency 1, 8, 64 and latency (1, 2)",
     run_exec},
    {"chunk", 3, "chunk latency through the subscriber", run_chunk},
    {"output", 4, "output throughput and peak memory", run_output},
    {"list", 5, "listing a large tree", run_list},
    {"files", 6, "1 MiB file write and read", run_files},
    {"spawn", 7, "spawn rate with 4 GiB of touched memory", run_spawn},
    {"sessions", 8, "session create+stop rate, memory per session",
     run_sessions},
    {"stop", 9, "stop of a session with 256 children", run_stop},
    {"distributed", 10,
     "remote node over loopback vs embedded: exec at concurrency 8, 256 MiB "
     "output (plain and TLS)",
     run_remote},
    {"contained", 11,
     "contained vs none sessions: exec at concurrency 1 and 8, session "
     "create + first exec",
     run_contained},
    {"scheduler", 12,
     "the node's scheduler (sharing, stealing, tuned stealing) vs CAF's "
     "default: exec at concurrency 1 and 8, session round trips",
     run_scheduler},
    {"processes", 13,
     "long-lived processes: first byte of an attach over loopback, memory "
     "per idle process",
     run_processes},
    {"http", 14,
     "HTTP vs embedded: exec at concurrency 8, 256 MiB streamed as NDJSON, "
     "1,000 idle connections",
     run_http},
  };
}

std::string self_exe() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string{};
}

std::string first_line_with(const char* path, const std::string& key) {
  std::ifstream in{path};
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size(), key) == 0) {
      auto colon = line.find(':');
      auto value = colon == std::string::npos ? line : line.substr(colon + 1);
      auto start = value.find_first_not_of(" \t");
      return start == std::string::npos ? "" : value.substr(start);
    }
  return {};
}

/// The machine the run happened on, for the report.
std::string machine_description() {
  utsname u{};
  ::uname(&u);
  auto mem_kib = std::strtoull(
    first_line_with("/proc/meminfo", "MemTotal").c_str(), nullptr, 10);
  char date[64];
  auto now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z",
                std::localtime(&now));
  return fmt::format("date: {}\nnproc: {}\nmemory: {:.1f} GiB\nkernel: {} {} "
                     "{}\ncpu: {}\n",
                     date, std::thread::hardware_concurrency(),
                     static_cast<double>(mem_kib) / (1 << 20), u.sysname,
                     u.release, u.machine,
                     first_line_with("/proc/cpuinfo", "model name"));
}

void apply_quick(options& opt) {
  opt.phase_seconds = 1.0;
  opt.output_bytes = uint64_t{256} << 20;
  opt.tree_entries = 20000;
  opt.hold_bytes = uint64_t{1} << 30;
  opt.sessions = 200;
  opt.chunk_runs = 8;
}

/// Parses the command line, runs the selected groups and reports.
int run_load(int argc, char** argv) {
  auto groups = all_groups();
  std::vector<std::string> names;
  for (auto& g : groups)
    names.push_back(g.name);
  options opt;
  std::vector<std::string> only;
  std::string out_dir = "bench-results";
  double seconds = 0;
  long grace_ms = opt.grace.count();
  bool no_plots = false;
  bool list = false;
  CLI::App app{"sandbox-load: the sandbox load generator (see "
               "docs/benchmarks.md)"};
  app.add_flag("--quick", opt.quick,
               "~30 s smoke run: short phases, small "
               "inputs");
  app.add_option("--only", only, "run only these groups (comma-separated)")
    ->delimiter(',')
    ->check(CLI::IsMember(names));
  app.add_option("--out", out_dir, "directory of results.csv and the plots")
    ->capture_default_str();
  app.add_option("--seconds", seconds,
                 "length of one timed phase "
                 "(default 3, 1 with --quick)");
  app.add_option("--grace-ms", grace_ms, "grace period of the stop plan")
    ->capture_default_str()
    ->check(CLI::Range(0L, 60000L));
  app.add_flag("--no-plots", no_plots, "do not run gnuplot");
  bool registered_only = false;
  app.add_flag("--diag-no-reap-all", registered_only,
               "diagnostic: run nodes with reap_all_orphans off (a node "
               "that is only a node runs with it on)");
  app.add_flag("--list", list, "list the scenario groups and exit");
  size_t sessions = 0;
  app.add_option("--sessions", sessions,
                 "sessions created and stopped by scenario 8 (default "
                 "1000; the node load test of issue 4 uses 10000)");
  CLI11_PARSE(app, argc, argv);
  if (list) {
    for (auto& g : groups)
      std::printf("%-12s %2d  %s\n", g.name.c_str(), g.scenario,
                  g.what.c_str());
    return 0;
  }
  if (opt.quick)
    apply_quick(opt);
  if (seconds > 0)
    opt.phase_seconds = seconds;
  if (sessions > 0)
    opt.sessions = sessions;
  opt.grace = std::chrono::milliseconds{grace_ms};
  opt.reap_all_orphans = !registered_only;
  opt.self_exe = self_exe();
  const char* tmp = std::getenv("TMPDIR");
  auto tmpl = fmt::format("{}/sandbox-bench-XXXXXX",
                          tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "cannot create a scratch directory: %s\n",
                 tmpl.c_str());
    return 1;
  }
  opt.scratch = tmpl;
  if (!make_dirs(out_dir)) {
    std::fprintf(stderr, "cannot create %s\n", out_dir.c_str());
    return 1;
  }
  auto machine = machine_description();
  std::printf("sandbox-load%s%s\n%s\n", opt.quick ? " --quick" : "",
              registered_only ? " --diag-no-reap-all" : "", machine.c_str());
  std::fflush(stdout);
  std::vector<row> rows;
  bool failed = false;
  auto start = clock::now();
  for (auto& g : groups) {
    if (!only.empty()
        && std::find(only.begin(), only.end(), g.name) == only.end())
      continue;
    std::fprintf(stderr, "[%6.1f s] %s: %s\n", seconds_since(start),
                 g.name.c_str(), g.what.c_str());
    try {
      auto part = g.run(opt);
      rows.insert(rows.end(), part.begin(), part.end());
    } catch (const std::exception& e) {
      row r;
      r.scenario = g.scenario;
      r.key = g.name + "_failed";
      r.label = g.name;
      r.result = verdict::not_available;
      r.note = std::string{"failed: "} + e.what();
      rows.push_back(std::move(r));
      failed = true;
      std::fprintf(stderr, "  %s failed: %s\n", g.name.c_str(), e.what());
    }
  }
  auto total = seconds_since(start);
  remove_tree(opt.scratch);
  std::printf("\n");
  print_table(rows);
  std::printf("\ntotal: %.1f s\n", total);
  {
    std::ofstream m{out_dir + "/machine.txt"};
    std::string command;
    for (int i = 0; i < argc; ++i)
      command += (i > 0 ? " " : "") + std::string{argv[i]};
    m << machine
      << fmt::format("command: {}\ntotal: {:.1f} s\n", command, total);
  }
  if (write_csv(rows, out_dir))
    std::printf("results: %s/results.csv\n", out_dir.c_str());
  else
    std::printf("cannot write %s/results.csv\n", out_dir.c_str());
  if (!no_plots)
    render_plots(rows, out_dir);
  return failed ? 1 : 0;
}

} // namespace

} // namespace sandbox::bench

int main(int argc, char** argv) {
  // A child of a scenario: do the helper's job before anything else.
  if (argc == 3 && std::string{argv[1]} == "--helper")
    return sandbox::bench::run_helper(argv[2]);
  return sandbox::bench::run_load(argc, argv);
}
