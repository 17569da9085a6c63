// Scenarios 3 and 4: the streaming path (child pipe → reactor → process
// actor → chunk sink → callback) against the same child read through a raw
// pipe in the calling thread.

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <stdexcept>

#include "bench.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/process/child_process.hpp"

namespace sandbox::bench {

namespace {

/// The child's sleep between its two lines (see the `gap` helper).
constexpr double gap_ms = 100.0;

/// Bytes per read of the raw baselines: as the reactor reads a busy
/// stream (child_process::max_read_size), from a pipe of the same size.
constexpr size_t read_size = child_process::max_read_size;

/// Runs `argv` with its stdout on a pipe and calls `on_read(n)` for every
/// read that returned bytes, in this thread; returns the wait status.
template <class F>
int raw_pipe_run(const std::vector<std::string>& argv, F on_read) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe2 failed");
  // The pipe size the reactor gives a busy stream (as far as the system
  // allows: the same fcntl, the same limit).
  (void) ::fcntl(fds[0], F_SETPIPE_SZ, static_cast<int>(read_size));
  auto pid = raw_spawn(argv, fds[1]);
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    throw std::runtime_error("cannot spawn " + argv[0]);
  }
  std::vector<char> buf(read_size);
  for (;;) {
    auto n = ::read(fds[0], buf.data(), buf.size());
    if (n > 0) {
      on_read(buf.data(), static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    break;
  }
  ::close(fds[0]);
  return raw_wait(pid);
}

/// Milliseconds between the first and the second arrival, minus the
/// child's sleep; NaN if fewer than two arrivals were seen.
double overhead_ms(const std::vector<clock::time_point>& arrivals) {
  if (arrivals.size() < 2)
    return std::numeric_limits<double>::quiet_NaN();
  return ms_between(arrivals[0], arrivals[1]) - gap_ms;
}

double mib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1 << 20);
}

} // namespace

std::vector<row> run_chunk(const options& opt) {
  const std::vector<std::string> argv{opt.self_exe, "--helper", "gap"};
  std::vector<double> raw;
  for (size_t i = 0; i < opt.chunk_runs; ++i) {
    std::vector<clock::time_point> arrivals;
    raw_pipe_run(argv, [&](const char*, size_t) {
      arrivals.push_back(clock::now());
    });
    raw.push_back(overhead_ms(arrivals));
  }
  std::vector<double> ours;
  size_t odd = 0;
  {
    actors::embedded_node node{node_config(opt)};
    auto s = make_session(node, opt, "chunk");
    auto cmd = sh_quote(opt.self_exe) + " --helper gap";
    for (size_t i = 0; i < opt.chunk_runs; ++i) {
      std::vector<clock::time_point> arrivals;
      auto r = s.execute_streaming(cmd, {}, [&](const output_chunk&) {
        arrivals.push_back(clock::now());
      });
      if (!r || r->exit_code != 0 || arrivals.size() != 2)
        ++odd;
      ours.push_back(overhead_ms(arrivals));
    }
    stop_session(s);
  }
  std::vector<row> rows;
  for (double q : {0.5, 0.99}) {
    row r;
    r.scenario = 3;
    r.key = q < 0.9 ? "chunk_p50" : "chunk_p99";
    r.label = fmt::format("chunk latency overhead {}", q < 0.9 ? "p50" : "p99");
    r.unit = "ms";
    r.ours = percentile(ours, q);
    r.baseline = percentile(raw, q);
    r.note = fmt::format("gap - {:g} ms, {} runs", gap_ms, opt.chunk_runs);
    if (odd > 0)
      r.note += fmt::format(", {} runs not 2 chunks", odd);
    if (q < 0.9) {
      r.goal = "<= 1 ms";
      r.result = judge(r.ours <= 1.0);
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<row> run_output(const options& opt) {
  auto cmd = fmt::format("head -c {} /dev/zero", opt.output_bytes);
  const int repeats = opt.quick ? 1 : 2;
  double raw_best = 0;
  uint64_t raw_peak = 0;
  for (int i = 0; i < repeats; ++i) {
    uint64_t bytes = 0;
    peak_meter meter;
    auto start = clock::now();
    raw_pipe_run({"/bin/sh", "-c", cmd},
                 [&](const char*, size_t n) { bytes += n; });
    auto secs = seconds_since(start);
    raw_peak = std::max(raw_peak, meter.growth());
    if (bytes != opt.output_bytes)
      throw std::runtime_error(fmt::format("raw pipe read {} bytes", bytes));
    raw_best = std::max(raw_best, mib(bytes) / secs);
  }
  double ours_best = 0;
  uint64_t ours_peak = 0;
  uint64_t chunks = 0;
  {
    actors::embedded_node node{node_config(opt)};
    auto s = make_session(node, opt, "output");
    for (int i = 0; i < repeats; ++i) {
      uint64_t bytes = 0;
      chunks = 0;
      peak_meter meter;
      auto start = clock::now();
      auto r = s.execute_streaming(cmd, {}, [&](const output_chunk& c) {
        bytes += c.data.size();
        ++chunks;
      });
      auto secs = seconds_since(start);
      ours_peak = std::max(ours_peak, meter.growth());
      if (!r || r->exit_code != 0 || bytes != opt.output_bytes)
        throw std::runtime_error(
          fmt::format("streaming delivered {} of {} bytes{}", bytes,
                      opt.output_bytes, r ? "" : ": " + r.error().message));
      ours_best = std::max(ours_best, mib(bytes) / secs);
    }
    stop_session(s);
  }
  auto size = opt.output_bytes >= (uint64_t{1} << 30)
                ? fmt::format("{:g} GiB",
                              static_cast<double>(opt.output_bytes) / (1 << 30))
                : fmt::format("{:g} MiB", mib(opt.output_bytes));
  std::vector<row> rows;
  row t;
  t.scenario = 4;
  t.key = "output_tput";
  t.label = fmt::format("output {} through streaming", size);
  t.unit = "MiB/s";
  t.ours = ours_best;
  t.baseline = raw_best;
  t.goal = ">= 0.5 x raw";
  t.result = judge(t.ratio() >= 0.5);
  t.note = fmt::format("best of {}; {:.0f} KiB per chunk", repeats,
                       chunks > 0 ? static_cast<double>(opt.output_bytes) / 1024
                                      / static_cast<double>(chunks)
                                  : 0.0);
  rows.push_back(std::move(t));
  row m;
  m.scenario = 4;
  m.key = "output_mem";
  m.label = fmt::format("output {}, node peak RSS growth", size);
  m.unit = "MiB";
  m.ours = mib(ours_peak);
  m.baseline = mib(raw_peak);
  m.note = "VmHWM after reset; result keeps 16 MiB (§9)";
  rows.push_back(std::move(m));
  return rows;
}

} // namespace sandbox::bench
