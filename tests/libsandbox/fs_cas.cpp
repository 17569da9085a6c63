#define CAF_SUITE libsandbox.fs_cas
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"
#include "helpers/quiet_fork.hpp"
#include "helpers/scale.hpp"

// Compare-and-swap under concurrency (§13): of any number of writers that
// hold the same version, exactly one wins, and the file then holds exactly
// the winner's bytes. Writers are threads of this process and, since the
// lock must work across processes too, forked processes.

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/stat.hpp"

#include "libsandbox/fs_fixture.hpp"

using sandbox::fs::atomic_writer;
using sandbox::fs::read_file;
using sandbox::fs::stat_path;
using sandbox::fs::testing::temp_dir_fixture;

namespace {

// 200 rounds in `make test-stress` (libsandbox.fs_cas.stress), 20 per commit.
const int rounds = sandbox::test::sized(20, 200);

/// The bytes writer `i` writes in round `r`: distinct per writer and round,
/// and longer than one page so that a torn file would show.
std::string payload(int r, int i) {
  return fmt::format("round {} writer {}\n{}", r, i,
                     std::string(5000 + i, static_cast<char>('a' + i % 26)));
}

/// Outcome of one writer: 0 won, 1 conflict, 2 anything else.
int outcome_of(const sandbox::result<void>& res) {
  if (res)
    return 0;
  return res.error().code == sandbox::errc::conflict ? 1 : 2;
}

/// What a round saw: how many writers won, lost with `conflict`, or failed
/// otherwise, and whether the file equals the winner's bytes.
struct round_result {
  int wins = 0;
  int conflicts = 0;
  int others = 0;
  bool file_is_winners = false;
};

struct cas_fixture : temp_dir_fixture {
  std::string target = path("target");

  cas_fixture() {
    put("target", "initial");
  }

  std::string version() {
    auto st = stat_path(target);
    return st ? st->version : std::string{};
  }

  round_result tally(const std::vector<int>& outcomes, int r) {
    round_result out;
    int winner = -1;
    for (size_t i = 0; i < outcomes.size(); ++i) {
      if (outcomes[i] == 0) {
        ++out.wins;
        winner = static_cast<int>(i);
      } else if (outcomes[i] == 1) {
        ++out.conflicts;
      } else {
        ++out.others;
      }
    }
    auto now = read_file(target);
    out.file_is_winners = winner >= 0 && now && *now == payload(r, winner);
    return out;
  }

  /// One round with `n` threads: each opens a writer with the current
  /// version and writes its bytes; then all commit at once.
  round_result thread_round(int n, int r) {
    auto v = version();
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<int> outcomes(static_cast<size_t>(n), 2);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        auto w = atomic_writer::open(target, v);
        auto ok = w && w->write(payload(r, i));
        ++ready;
        while (!go.load())
          std::this_thread::yield();
        if (ok)
          outcomes[static_cast<size_t>(i)] = outcome_of(w->commit());
      });
    }
    while (ready.load() < n)
      std::this_thread::yield();
    go = true;
    for (auto& t : threads)
      t.join();
    return tally(outcomes, r);
  }

  /// One round with `n` forked processes, released together by closing the
  /// pipe they all wait on; each reports its outcome as its exit status.
  round_result process_round(int n, int r) {
    auto v = version();
    int ready[2];
    int go[2];
    if (::pipe(ready) != 0 || ::pipe(go) != 0)
      CAF_FAIL("pipe failed");
    std::vector<pid_t> pids;
    for (int i = 0; i < n; ++i) {
      auto pid = sandbox::test::quiet_fork();
      if (pid == 0) {
        ::close(ready[0]);
        ::close(go[1]);
        auto w = atomic_writer::open(target, v);
        auto ok = w && w->write(payload(r, i));
        char c = 'r';
        if (::write(ready[1], &c, 1) != 1)
          ::_exit(3);
        // EOF once the parent closes its end: every child starts at once.
        while (::read(go[0], &c, 1) < 0) {
        }
        ::_exit(ok ? outcome_of(w->commit()) : 2);
      }
      pids.push_back(pid);
    }
    ::close(ready[1]);
    ::close(go[0]);
    char c;
    for (int i = 0; i < n; ++i)
      if (::read(ready[0], &c, 1) != 1)
        break;
    ::close(go[1]);
    ::close(ready[0]);
    std::vector<int> outcomes;
    for (auto pid : pids) {
      int st = 0;
      ::waitpid(pid, &st, 0);
      outcomes.push_back(WIFEXITED(st) ? WEXITSTATUS(st) : 2);
    }
    return tally(outcomes, r);
  }

  template <class Round>
  void run_rounds(int n, Round round) {
    int bad = 0;
    for (int r = 0; r < rounds; ++r) {
      auto res = round(n, r);
      if (res.wins != 1 || res.conflicts != n - 1 || !res.file_is_winners) {
        if (++bad <= 3)
          CAF_MESSAGE("round " << r << " of " << n << " writers: " << res.wins
                               << " won, " << res.conflicts << " conflicts, "
                               << res.others
                               << " other errors, file is the winner's: "
                               << res.file_is_winners);
      }
    }
    CAF_CHECK_EQUAL(bad, 0);
    CAF_CHECK_EQUAL(names(), std::vector<std::string>{"target"});
  }

  std::vector<std::string> names() {
    std::vector<std::string> out;
    for (auto& e : std::filesystem::directory_iterator(dir))
      out.push_back(e.path().filename().string());
    return out;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(fs_cas_tests, cas_fixture)

CAF_TEST(threads with one version have exactly one winner per round) {
  for (int n : {2, 8, 32}) {
    CAF_MESSAGE(n << " threads, " << rounds << " rounds");
    run_rounds(n, [this](int n, int r) { return thread_round(n, r); });
  }
}

CAF_TEST(processes with one version have exactly one winner per round) {
  for (int n : {2, 8, 32}) {
    CAF_MESSAGE(n << " processes, " << rounds << " rounds");
    run_rounds(n, [this](int n, int r) { return process_round(n, r); });
  }
}

CAF_TEST(create only has exactly one winner per round) {
  // An empty version: the file must not exist (RENAME_NOREPLACE).
  int bad = 0;
  for (int r = 0; r < rounds; ++r) {
    ::unlink(target.c_str());
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<int> outcomes(8, 2);
    std::vector<std::string> failures(8);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&, i] {
        auto idx = static_cast<size_t>(i);
        auto w = atomic_writer::open(target, std::string{});
        auto ok = w && w->write(payload(r, i));
        if (!w)
          failures[idx] = "open: " + w.error().message;
        else if (!ok)
          failures[idx] = "write failed";
        ++ready;
        while (!go.load())
          std::this_thread::yield();
        if (ok) {
          auto res = w->commit();
          outcomes[idx] = outcome_of(res);
          if (outcomes[idx] == 2)
            failures[idx] = "commit: " + res.error().message;
        }
      });
    while (ready.load() < 8)
      std::this_thread::yield();
    go = true;
    for (auto& t : threads)
      t.join();
    auto res = tally(outcomes, r);
    if (res.wins != 1 || res.conflicts != 7 || !res.file_is_winners) {
      ++bad;
      CAF_MESSAGE("round " << r << ": " << res.wins << " wins, "
                           << res.conflicts << " conflicts, file is winner's: "
                           << res.file_is_winners);
      for (auto& f : failures)
        if (!f.empty())
          CAF_MESSAGE("  " << f);
    }
  }
  CAF_CHECK_EQUAL(bad, 0);
  CAF_CHECK_EQUAL(names(), std::vector<std::string>{"target"});
}

CAF_TEST_FIXTURE_SCOPE_END()
