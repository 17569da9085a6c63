// The results people see: a table on stdout (a Markdown table, so it can
// be pasted into docs/benchmarks.md as is), results.csv, and PNG plots
// rendered by gnuplot from a generated script.

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "bench.hpp"

extern char** environ;

namespace sandbox::bench {

namespace {

std::string format_number(double x) {
  if (std::isnan(x))
    return "n/a";
  auto a = std::fabs(x);
  if (a >= 100)
    return fmt::format("{:.0f}", x);
  if (a >= 10)
    return fmt::format("{:.1f}", x);
  return fmt::format("{:.2f}", x);
}

std::string format_value(double x, const std::string& unit) {
  if (std::isnan(x))
    return "n/a";
  return format_number(x) + " " + unit;
}

std::string format_verdict(verdict v) {
  switch (v) {
    case verdict::met:
      return "met";
    case verdict::not_met:
      return "NOT MET";
    case verdict::not_available:
      return "n/a";
    case verdict::none:
      break;
  }
  return "-";
}

std::string format_ratio(const row& r) {
  auto x = r.ratio();
  return std::isnan(x) ? "n/a" : fmt::format("{:.2f}", x);
}

std::vector<std::vector<std::string>> cells(const std::vector<row>& rows) {
  std::vector<std::vector<std::string>> out;
  out.push_back({"#", "scenario", "ours", "baseline", "ours/baseline", "goal",
                 "verdict", "note"});
  for (auto& r : rows)
    out.push_back(
      {std::to_string(r.scenario), r.label, format_value(r.ours, r.unit),
       format_value(r.baseline, r.unit), format_ratio(r),
       r.goal.empty() ? "-" : r.goal, format_verdict(r.result), r.note});
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"')
      out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_number(double x) {
  return std::isnan(x) ? "" : fmt::format("{:.6g}", x);
}

/// Looks `name` up in PATH.
std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    auto end = dirs.find(':', pos);
    if (end == std::string::npos)
      end = dirs.size();
    auto candidate = dirs.substr(pos, end - pos) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    pos = end + 1;
  }
  return {};
}

/// Writes `name` in `dir` with one line per listed row present in `rows`:
/// `"label" ours baseline` (NaN as "NaN", which gnuplot skips).
bool write_data(const std::string& path, const std::vector<row>& rows,
                const std::vector<std::pair<std::string, std::string>>& keys,
                bool ratio) {
  std::map<std::string, const row*> by_key;
  for (auto& r : rows)
    by_key[r.key] = &r;
  std::ofstream out{path};
  size_t n = 0;
  for (auto& [key, label] : keys) {
    auto i = by_key.find(key);
    if (i == by_key.end())
      continue;
    auto& r = *i->second;
    auto num = [](double x) {
      return std::isnan(x) ? std::string{"NaN"} : fmt::format("{:.6g}", x);
    };
    if (ratio)
      out << '"' << label << "\" " << num(r.ratio()) << '\n';
    else
      out << '"' << label << "\" " << num(r.ours) << ' ' << num(r.baseline)
          << '\n';
    ++n;
  }
  return n > 0;
}

// The common head of the generated gnuplot script.
constexpr const char* plot_header = R"(
has_cairo = strstrt(GPVAL_TERMINALS, "pngcairo") > 0
if (has_cairo) {
  set terminal pngcairo noenhanced size 900,520 font ",10"
} else {
  set terminal png noenhanced size 900,520
}
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set yrange [0:*]
)";

std::string plot_script(const std::string& dir, const std::string& stamp,
                        bool exec, bool ratios, bool latency, bool stop) {
  std::string s = plot_header;
  auto q = [&](const std::string& name) {
    return "'" + dir + "/" + name + "'";
  };
  if (exec)
    s += fmt::format(
      "set output {}\n"
      "set title 'Scenario 1: exec of true, per second ({})'\n"
      "set xlabel 'concurrency'\nset ylabel 'executions / s'\n"
      "plot {} using 2:xtic(1) title 'sandbox session', '' using 3 "
      "title 'raw posix_spawn + waitpid'\nunset xlabel\n",
      q("exec_throughput.png"), stamp, q("exec_throughput.dat"));
  if (ratios)
    s += fmt::format(
      "set output {}\n"
      "set title 'ours / baseline, throughput rows (higher is better; "
      "1 = as fast as raw) ({})'\n"
      "set ylabel 'ratio'\nset xtics rotate by -30\nunset key\n"
      "set yrange [0:1.2<*]\n"
      "plot {} using 2:xtic(1) title 'ours / baseline', 1 with lines "
      "dt 2 lc rgb 'black' notitle\n"
      "set xtics norotate\nset key top left\nset yrange [0:*]\n",
      q("ratios.png"), stamp, q("ratios.dat"));
  if (latency)
    s += fmt::format(
      "set output {}\n"
      "set title 'Scenarios 2 and 3: latency ({})'\n"
      "set ylabel 'ms'\n"
      "plot {} using 2:xtic(1) title 'sandbox', '' using 3 title 'raw "
      "(posix_spawn / pipe)'\n",
      q("latency.png"), stamp, q("latency.dat"));
  if (stop)
    s += fmt::format(
      "set output {}\n"
      "set title 'Scenario 9: stop request until every child is reaped "
      "({})'\n"
      "set ylabel 'ms (log scale)'\nset logscale y\nset yrange [1:*]\n"
      "plot {} using 2:xtic(1) title 'session stop', '' using 3 title "
      "'raw kill + waitpid'\nunset logscale y\nset yrange [0:*]\n",
      q("stop.png"), stamp, q("stop.dat"));
  return s;
}

} // namespace

void print_table(const std::vector<row>& rows) {
  auto table = cells(rows);
  std::vector<size_t> width(table.front().size(), 0);
  for (auto& line : table)
    for (size_t i = 0; i < line.size(); ++i)
      width[i] = std::max(width[i], line[i].size());
  auto print_line = [&](const std::vector<std::string>& line) {
    std::string out = "|";
    for (size_t i = 0; i < line.size(); ++i) {
      // Numbers read best right-aligned.
      bool right = i >= 2 && i <= 4;
      out += right ? fmt::format(" {:>{}} |", line[i], width[i])
                   : fmt::format(" {:<{}} |", line[i], width[i]);
    }
    std::puts(out.c_str());
  };
  print_line(table.front());
  std::string rule = "|";
  for (size_t i = 0; i < width.size(); ++i) {
    bool right = i >= 2 && i <= 4;
    rule += " " + std::string(width[i] - (right ? 1 : 0), '-')
            + (right ? ":" : "") + " |";
  }
  std::puts(rule.c_str());
  for (size_t i = 1; i < table.size(); ++i)
    print_line(table[i]);
  std::fflush(stdout);
}

bool write_csv(const std::vector<row>& rows, const std::string& dir) {
  std::ofstream out{dir + "/results.csv"};
  if (!out)
    return false;
  out << "scenario,key,label,unit,ours,baseline,ratio,goal,verdict,note\n";
  for (auto& r : rows)
    out << r.scenario << ',' << csv_field(r.key) << ',' << csv_field(r.label)
        << ',' << csv_field(r.unit) << ',' << csv_number(r.ours) << ','
        << csv_number(r.baseline) << ',' << csv_number(r.ratio()) << ','
        << csv_field(r.goal) << ',' << csv_field(format_verdict(r.result))
        << ',' << csv_field(r.note) << '\n';
  return static_cast<bool>(out);
}

bool render_plots(const std::vector<row>& rows, const std::string& dir_in) {
  auto gnuplot = find_program("gnuplot");
  if (gnuplot.empty()) {
    std::puts("gnuplot not found: plots skipped (Debian: apt-get install "
              "gnuplot-nox)");
    return false;
  }
  std::error_code ec;
  auto dir = std::filesystem::absolute(dir_in, ec).lexically_normal().string();
  if (!dir.empty() && dir.back() == '/')
    dir.pop_back();
  bool exec = write_data(
    dir + "/exec_throughput.dat", rows,
    {{"exec_c1", "1"}, {"exec_c8", "8"}, {"exec_c64", "64"}}, false);
  bool ratios = write_data(dir + "/ratios.dat", rows,
                           {{"exec_c1", "exec c=1"},
                            {"exec_c8", "exec c=8"},
                            {"exec_c64", "exec c=64"},
                            {"output_tput", "output stream"},
                            {"list_tput", "list tree"},
                            {"write", "write 1 MiB"},
                            {"read", "read 1 MiB"},
                            {"spawn_rate", "spawn, memory held"},
                            {"session_rate", "session create+stop"},
                            {"contained_exec_c1", "contained/none c=1"},
                            {"contained_exec_c8", "contained/none c=8"}},
                           true);
  bool latency = write_data(dir + "/latency.dat", rows,
                            {{"exec_p50", "exec p50"},
                             {"exec_p99", "exec p99"},
                             {"chunk_p50", "chunk overhead p50"},
                             {"chunk_p99", "chunk overhead p99"}},
                            false);
  bool stop = write_data(dir + "/stop.dat", rows,
                         {{"stop_term", "exit on SIGTERM"},
                          {"stop_ignore", "ignore SIGTERM (+grace)"}},
                         false);
  if (!exec && !ratios && !latency && !stop)
    return true;
  char stamp[32];
  auto now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d", std::localtime(&now));
  auto script_path = dir + "/plots.gp";
  {
    std::ofstream script{script_path};
    script << plot_script(dir, stamp, exec, ratios, latency, stop);
  }
  std::vector<std::string> argv{gnuplot, script_path};
  std::vector<char*> args{argv[0].data(), argv[1].data(), nullptr};
  pid_t pid = -1;
  if (::posix_spawn(&pid, gnuplot.c_str(), nullptr, nullptr, args.data(),
                    environ)
      != 0) {
    std::puts("gnuplot could not be started: plots skipped");
    return false;
  }
  auto status = raw_wait(pid);
  if (status != 0) {
    std::printf("gnuplot failed (status %d); see %s\n", status,
                script_path.c_str());
    return false;
  }
  std::string made;
  for (auto [name, ok] :
       {std::pair{"exec_throughput", exec}, std::pair{"ratios", ratios},
        std::pair{"latency", latency}, std::pair{"stop", stop}})
    if (ok)
      made += fmt::format("{}{}.png", made.empty() ? "" : ", ", name);
  std::printf("plots in %s: %s\n", dir.c_str(), made.c_str());
  return true;
}

} // namespace sandbox::bench
