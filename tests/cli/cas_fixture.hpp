#pragma once

// The fixture of the CLI compare-and-swap suites (cli.files_cas,
// cli.files_cas_32): `sandbox write --if-version V` in separate processes,
// each with its own embedded node, all holding the same version; a round
// lets them commit at once and expects exactly one winner.

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "caf/test/unit_test.hpp"
#include "cli_fixture.hpp"
#include "helpers/check.hpp"
#include "helpers/scale.hpp"
#include "sandbox/fs/stat.hpp"

namespace sandbox::test {

/// Rounds of `writers` writers. The acceptance of the CAS write asks for
/// 200, which `make test-stress` runs (the `.stress` entries): embedded,
/// every writer is a CLI process with a node of its own (32 writers: 6,400
/// processes, about 300 s on 2 cores). The twins show the same property in
/// fewer rounds: against a remote node every writer is three CLI processes
/// (see cli_fixture.hpp), each in a session of its own on the one node (20
/// rounds); with contained sessions every writer also starts a contained
/// session's init, and 32 of them take about 2 s a round on 2 loaded cores
/// (50 rounds of 32). Per commit (`make test`) every variant runs a tenth
/// of that, at least 5 rounds: a lost or doubled winner is a property of
/// any round, and 20 rounds of 32 writers still race 640 commits.
/// Sanitizer builds make every CLI process two to three times as
/// expensive: they run the per-commit rounds even as a stress entry.
inline int cas_rounds(int writers) {
  int full = 200;
  if (remote_mode())
    full = 20;
  else if (contained_run() && writers == 32)
    full = 50;
#ifdef SANDBOX_TEST_SANITIZED
  constexpr bool sanitized = true;
#else
  constexpr bool sanitized = false;
#endif
  if (stress_run() && !sanitized)
    return full;
  return std::max(5, full / 10);
}

/// A `sandbox` CLI process with a pipe as its stdin and a file as stdout.
struct cli_writer {
  pid_t pid = -1;
  int in = -1;
};

/// `root/w` is the writers' working directory, `root/tmp` their TMPDIR,
/// `root/out-I` the stdout of writer I.
struct cas_fixture {
  temp_dir dir;
  std::string root = dir.path;
  std::string wd = root + "/w";
  std::string target = wd + "/target";

  cas_fixture() {
    if (::mkdir(wd.c_str(), 0755) != 0
        || ::mkdir((root + "/tmp").c_str(), 0755) != 0)
      CAF_FAIL("cannot prepare " << root);
  }

  std::string out_of(int i) const {
    return root + "/out-" + std::to_string(i);
  }

  /// Starts `sandbox ARGS` in `wd`; its stdout goes to `out_of(i)`.
  cli_writer start(int i, const std::vector<std::string>& args) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
      CAF_FAIL("pipe failed");
    auto out = out_of(i);
    auto tmpdir = root + "/tmp";
    std::vector<std::string> argv_s{cli_path()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    auto pid = ::fork();
    if (pid == 0) {
      auto fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      auto null = ::open("/dev/null", O_WRONLY);
      if (fd < 0 || null < 0 || ::dup2(p[0], 0) < 0 || ::dup2(fd, 1) < 0
          || ::dup2(null, 2) < 0 || ::chdir(wd.c_str()) != 0
          || ::setenv("TMPDIR", tmpdir.c_str(), 1) != 0)
        ::_exit(120);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(p[0]);
    return {pid, p[1]};
  }

  static int wait_for(pid_t pid) {
    int st = 0;
    if (::waitpid(pid, &st, 0) != pid)
      return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  /// Waits until the writer has read everything written to its stdin so
  /// far: it has then opened its write (the CLI opens it before reading).
  static void wait_drained(const cli_writer& w) {
    for (;;) {
      int n = 0;
      if (::ioctl(w.in, FIONREAD, &n) != 0 || n == 0)
        return;
      // A writer that failed early never reads: it has exited (not reaped
      // here, so that `wait_for` still gets its status).
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(w.pid), &info,
                   WEXITED | WNOHANG | WNOWAIT)
            == 0
          && info.si_pid == w.pid)
        return;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  /// One round: `n` CLI writers hold the current version, each has read its
  /// bytes; closing their stdin lets all commit at once. Returns the rounds
  /// outcome as (winners, conflicts, file is the winner's bytes).
  std::tuple<int, int, bool> round(int n, int r) {
    auto v = fs::stat_path(target).value().version;
    std::vector<cli_writer> ws;
    std::vector<std::string> payloads;
    for (int i = 0; i < n; ++i) {
      payloads.push_back("round " + std::to_string(r) + " writer "
                         + std::to_string(i) + "\n"
                         + std::string(1000 + i, 'a' + i % 26));
      ws.push_back(start(i, {"write", "--json", "--if-version", v, "target"}));
      auto& p = payloads.back();
      if (::write(ws.back().in, p.data(), p.size())
          != static_cast<ssize_t>(p.size()))
        CAF_FAIL("cannot feed writer " << i);
    }
    for (auto& w : ws)
      wait_drained(w);
    for (auto& w : ws)
      ::close(w.in);
    int wins = 0;
    int conflicts = 0;
    int winner = -1;
    for (int i = 0; i < n; ++i) {
      auto status = wait_for(ws[static_cast<size_t>(i)].pid);
      auto out = slurp(out_of(i));
      if (status == 0) {
        ++wins;
        winner = i;
      } else if (status == 1
                 && out.find("\"code\":\"conflict\"") != std::string::npos) {
        ++conflicts;
      } else {
        CAF_MESSAGE("writer " << i << " exited " << status << ": " << out);
      }
    }
    auto now = slurp(target);
    auto is_winners = winner >= 0
                      && now == payloads[static_cast<size_t>(winner)];
    return {wins, conflicts, is_winners};
  }

  void run_rounds(int n, int count) {
    std::ofstream{target} << "initial";
    auto t0 = std::chrono::steady_clock::now();
    int bad = 0;
    for (int r = 0; r < count; ++r) {
      auto [wins, conflicts, is_winners] = round(n, r);
      if (wins != 1 || conflicts != n - 1 || !is_winners) {
        if (++bad <= 3)
          CAF_MESSAGE("round " << r << " of " << n << " writers: " << wins
                               << " won, " << conflicts << " conflicts");
      }
    }
    auto secs
      = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
    CAF_MESSAGE(n << " writers, " << count << " rounds: " << secs << " s");
    CAF_CHECK_EQUAL(bad, 0);
    CAF_CHECK(names_in(wd) == std::vector<std::string>{"target"});
  }
};

} // namespace sandbox::test
