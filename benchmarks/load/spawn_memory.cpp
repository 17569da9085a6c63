// Scenario 7: spawning must not slow down as the node grows (semantics §25:
// launch with posix_spawn, not a plain fork of a large process).
//
// The spawn rate (`execute("true")` at concurrency 8) is measured with no
// extra memory, with the node holding 4 GiB of touched memory, and with none
// again; the baseline is the mean of the two runs without. An informational
// row shows what a plain fork + exec of the same process would pay.

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "bench.hpp"
#include "load_driver.hpp"

namespace sandbox::bench {

namespace {

constexpr size_t spawn_concurrency = 8;

/// Anonymous memory, every page written once, in small pages (huge pages
/// would shrink the page tables a fork has to copy and flatter the fork
/// row).
class held_memory {
public:
  explicit held_memory(uint64_t bytes) : size_(bytes) {
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw std::runtime_error(
        fmt::format("cannot map {} bytes: {}", size_, std::strerror(errno)));
    base_ = static_cast<char*>(p);
    ::madvise(base_, size_, MADV_NOHUGEPAGE);
    auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    for (uint64_t off = 0; off < size_; off += page)
      base_[off] = 1;
  }
  ~held_memory() {
    ::munmap(base_, size_);
  }
  held_memory(const held_memory&) = delete;
  held_memory& operator=(const held_memory&) = delete;

private:
  uint64_t size_;
  char* base_ = nullptr;
};

load_result ours_rate(std::vector<actors::blocking_session>& sessions,
                      double seconds) {
  return drive(sessions.size(), seconds, false, [&](size_t w) {
    auto r = sessions[w].execute("true");
    return r && r->exit_code == 0;
  });
}

/// fork + exec of `/bin/sh -c true` + waitpid, one at a time.
load_result fork_rate(double seconds) {
  return drive(1, seconds, false, [](size_t) {
    char sh[] = "/bin/sh";
    char flag[] = "-c";
    char cmd[] = "true";
    char* argv[] = {sh, flag, cmd, nullptr};
    auto pid = ::fork();
    if (pid == 0) {
      ::execv(sh, argv);
      ::_exit(127);
    }
    return pid > 0 && raw_wait(pid) == 0;
  });
}

} // namespace

std::vector<row> run_spawn(const options& opt) {
  const double warmup = opt.quick ? 0.1 : 0.3;
  load_result without1;
  load_result with;
  load_result without2;
  uint64_t held_rss = 0;
  {
    actors::embedded_node node{node_config(opt)};
    std::vector<actors::blocking_session> sessions;
    for (size_t i = 0; i < spawn_concurrency; ++i)
      sessions.push_back(make_session(node, opt, fmt::format("spawn/w{}", i)));
    ours_rate(sessions, warmup);
    without1 = ours_rate(sessions, opt.phase_seconds);
    {
      held_memory mem{opt.hold_bytes};
      held_rss = resident_bytes();
      ours_rate(sessions, warmup);
      with = ours_rate(sessions, opt.phase_seconds);
    }
    without2 = ours_rate(sessions, opt.phase_seconds);
    for (auto& s : sessions)
      stop_session(s);
  }
  // The fork contrast runs without a node: its reaper would take the
  // forked children.
  const double fork_seconds = opt.quick ? 0.3 : 1.0;
  load_result fork_with;
  {
    held_memory mem{opt.hold_bytes};
    fork_with = fork_rate(fork_seconds);
  }
  auto fork_without = fork_rate(fork_seconds);
  auto gib = static_cast<double>(opt.hold_bytes) / (1 << 30);
  std::vector<row> rows;
  row r;
  r.scenario = 7;
  r.key = "spawn_rate";
  r.label = fmt::format("spawn rate, node holds {:g} GiB vs none", gib);
  r.unit = "exec/s";
  r.ours = with.rate();
  r.baseline = (without1.rate() + without2.rate()) / 2;
  r.goal = ">= 0.9";
  r.result = judge(r.ratio() >= 0.9);
  // CPU per execution in the node is less sensitive to other load on the
  // machine than the rate: it tells a real slowdown from a noisy phase.
  auto node_us = [](const load_result& x) { return x.cpu_per_op_us().first; };
  r.note = fmt::format("c={}; without: {:.0f} then {:.0f}/s; node CPU/exec "
                       "{:.0f} us held vs {:.0f}, {:.0f} us; node RSS {:.1f} "
                       "GiB while held",
                       spawn_concurrency, without1.rate(), without2.rate(),
                       node_us(with), node_us(without1), node_us(without2),
                       static_cast<double>(held_rss) / (1 << 30));
  rows.push_back(std::move(r));
  row f;
  f.scenario = 7;
  f.key = "spawn_fork";
  f.label = fmt::format("(info) raw fork+exec, {:g} GiB vs none", gib);
  f.unit = "exec/s";
  f.ours = fork_with.rate();
  f.baseline = fork_without.rate();
  f.note = "what a plain fork would cost; not our path";
  rows.push_back(std::move(f));
  return rows;
}

} // namespace sandbox::bench
