#pragma once

// A closed-loop load driver: N threads each repeat one operation until a
// deadline, counting completions and (optionally) recording each latency.

#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "bench.hpp"

namespace sandbox::bench {

/// What a timed phase of the driver measured.
struct load_result {
  uint64_t ops = 0;
  uint64_t errors = 0;
  /// Wall time from the start until every worker finished its last
  /// operation (operations started before the deadline are counted).
  double seconds = 0;
  /// Milliseconds per operation, when recorded.
  std::vector<double> latencies_ms;
  /// CPU seconds of this process and of its reaped children in the phase.
  cpu_time cpu;

  /// Microseconds of CPU per operation: this process, its children.
  std::pair<double, double> cpu_per_op_us() const {
    if (ops == 0)
      return {0, 0};
    auto n = static_cast<double>(ops);
    return {cpu.self * 1e6 / n, cpu.children * 1e6 / n};
  }

  double rate() const {
    return seconds > 0 ? static_cast<double>(ops) / seconds : 0;
  }
};

/// Adds `b` to `a`: operations, errors, time, latencies and CPU.
inline void merge(load_result& a, const load_result& b) {
  a.ops += b.ops;
  a.errors += b.errors;
  a.seconds += b.seconds;
  a.cpu.self += b.cpu.self;
  a.cpu.children += b.cpu.children;
  a.cpu.switches += b.cpu.switches;
  a.latencies_ms.insert(a.latencies_ms.end(), b.latencies_ms.begin(),
                        b.latencies_ms.end());
}

/// CPU per execution (this process + its children) of both sides, named
/// `ours_name` and `base_name`, and failures if there were any.
inline std::string exec_note(const load_result& ours, const load_result& base,
                             std::string_view ours_name = "ours",
                             std::string_view base_name = "raw") {
  auto [ours_self, ours_kids] = ours.cpu_per_op_us();
  auto [base_self, base_kids] = base.cpu_per_op_us();
  auto per_op = [](const load_result& r) {
    return r.ops > 0 ? r.cpu.switches / static_cast<double>(r.ops) : 0.0;
  };
  auto note = fmt::format("CPU/exec node+children: {} {:.0f}+{:.0f} us, "
                          "{} {:.0f}+{:.0f} us; thread switches/exec: {} "
                          "{:.1f}, {} {:.1f}",
                          ours_name, ours_self, ours_kids, base_name, base_self,
                          base_kids, ours_name, per_op(ours), base_name,
                          per_op(base));
  if (ours.errors > 0 || base.errors > 0)
    note += fmt::format("; errors: {} {}, {} {}", ours_name, ours.errors,
                        base_name, base.errors);
  return note;
}

/// The row of latency quantile `q` (0.5: p50, 0.99: p99) of `ours` against
/// `base`; `key` and `label` get "_p50" and " p50" (or p99) added.
inline row latency_row(int scenario, const std::string& key,
                       const std::string& label, const load_result& ours,
                       const load_result& base, double q) {
  auto name = q < 0.9 ? "p50" : "p99";
  row r;
  r.scenario = scenario;
  r.key = fmt::format("{}_{}", key, name);
  r.label = fmt::format(fmt::runtime(label), name);
  r.unit = "ms";
  r.ours = percentile(ours.latencies_ms, q);
  r.baseline = percentile(base.latencies_ms, q);
  r.note = fmt::format("{} / {} samples", ours.latencies_ms.size(),
                       base.latencies_ms.size());
  return r;
}

/// Runs `op(worker)` on `concurrency` threads for `seconds`. `op` returns
/// whether the operation succeeded; failures are counted, not timed.
template <class Op>
load_result drive(size_t concurrency, double seconds, bool record, Op op) {
  struct worker_result {
    uint64_t ops = 0;
    uint64_t errors = 0;
    std::vector<double> latencies_ms;
  };
  std::vector<worker_result> parts(concurrency);
  std::vector<std::thread> threads;
  threads.reserve(concurrency);
  auto cpu0 = cpu_now();
  auto start = clock::now();
  auto deadline = start
                  + std::chrono::duration_cast<clock::duration>(
                    std::chrono::duration<double>(seconds));
  for (size_t w = 0; w < concurrency; ++w)
    threads.emplace_back([&, w] {
      auto& part = parts[w];
      while (clock::now() < deadline) {
        auto t0 = clock::now();
        bool ok = op(w);
        auto t1 = clock::now();
        if (!ok) {
          ++part.errors;
          continue;
        }
        ++part.ops;
        if (record)
          part.latencies_ms.push_back(ms_between(t0, t1));
      }
    });
  for (auto& t : threads)
    t.join();
  load_result out;
  out.seconds = seconds_since(start);
  auto cpu1 = cpu_now();
  out.cpu = {cpu1.self - cpu0.self, cpu1.children - cpu0.children,
             cpu1.switches - cpu0.switches};
  for (auto& part : parts) {
    out.ops += part.ops;
    out.errors += part.errors;
    out.latencies_ms.insert(out.latencies_ms.end(), part.latencies_ms.begin(),
                            part.latencies_ms.end());
  }
  return out;
}

} // namespace sandbox::bench
