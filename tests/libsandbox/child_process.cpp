#define CAF_SUITE libsandbox.child_process
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"
#include "helpers/temp_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/process/child_process.hpp"
#include "sandbox/process/launcher.hpp"
#include "sandbox/process/process_tree.hpp"
#include "sandbox/process/reaper.hpp"

using sandbox::child_process;
using sandbox::reaper;

namespace {

sandbox::launch_spec shell(std::string command) {
  sandbox::launch_spec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", std::move(command)};
  spec.cwd = "/";
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  return spec;
}

/// Children of this process among `pids`, zombies included: a reaped pid
/// is not one any more, even if the system reuses it for someone else.
size_t children_among(const std::vector<pid_t>& pids) {
  size_t n = 0;
  auto self = ::getpid();
  for (auto& e : sandbox::proc_snapshot())
    if (e.ppid == self
        && std::find(pids.begin(), pids.end(), e.pid) != pids.end())
      ++n;
  return n;
}

/// Waits (up to 30 s) until `pid` sleeps in a kernel function whose name
/// ends with `fn` (/proc/<pid>/wchan; `pipe_write` is `anon_pipe_write` on
/// newer kernels): a state of the child, polled, not a guess of time.
bool wait_for_wchan(pid_t pid, const std::string& fn) {
  auto path = "/proc/" + std::to_string(pid) + "/wchan";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in{path};
    std::string at;
    std::getline(in, at);
    if (at.size() >= fn.size()
        && at.compare(at.size() - fn.size(), fn.size(), fn) == 0)
      return true;
    std::this_thread::yield();
  }
  return false;
}

struct fixture {
  sandbox::reactor reactor{1};

  sandbox::result<std::shared_ptr<child_process>>
  start_owned(const std::string& command) {
    return reaper::launch_owned(
      [&] { return child_process::start(reactor, shell(command)); });
  }

  /// Activates `c` and waits for its exit report.
  sandbox::result<int> exit_of(const std::shared_ptr<child_process>& c) {
    std::promise<sandbox::result<int>> exited;
    auto reported = exited.get_future();
    sandbox::child_events ev;
    ev.on_finished = [&exited](sandbox::result<int> status,
                               sandbox::kept_output) {
      exited.set_value(std::move(status));
    };
    c->activate(std::move(ev));
    auto status = reported.get();
    c->shutdown();
    return status;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(child_process_tests, fixture)

CAF_TEST(the exit watch reports the raw wait status) {
  auto c = start_owned("exit 3");
  CAF_REQUIRE(c.has_value());
  auto status = exit_of(*c);
  CAF_REQUIRE(status.has_value());
  CAF_CHECK(WIFEXITED(*status));
  CAF_CHECK_EQUAL(WEXITSTATUS(*status), 3);
}

// code review #4: a failed waitpid became exit status 0.
CAF_TEST(a status that cannot be collected is an error and not exit 0) {
  // With SIGCHLD ignored the kernel reaps children itself: waitpid fails
  // with ECHILD, as when a host application sets that disposition.
  struct sigaction ignore = {};
  struct sigaction old = {};
  ignore.sa_handler = SIG_IGN;
  CAF_REQUIRE_EQUAL(::sigaction(SIGCHLD, &ignore, &old), 0);
  auto before = reaper::owned_count();
  // The child waits for the end of its stdin, so that it is still there
  // when the launch opens its pidfd.
  auto spec = shell("read line; exit 0");
  spec.pipe_stdin = true;
  auto c
    = reaper::launch_owned([&] { return child_process::start(reactor, spec); });
  CAF_REQUIRE(c.has_value());
  auto pid = (*c)->pid();
  (*c)->close_stdin();
  auto status = exit_of(*c);
  ::sigaction(SIGCHLD, &old, nullptr);
  CAF_REQUIRE(!status.has_value());
  CAF_CHECK(status.error().code == sandbox::errc::io_error);
  CAF_MESSAGE(status.error().message);
  CAF_CHECK_NOT_EQUAL(status.error().message.find(std::to_string(pid)),
                      std::string::npos);
  CAF_CHECK_NOT_EQUAL(status.error().message.find("waitpid"),
                      std::string::npos);
  // The child is gone for good: it is not registered as owned any more.
  CAF_CHECK_EQUAL(reaper::owned_count(), before);
}

// code review #5: the destructor reaped without releasing the pid.
CAF_TEST(a destroyed child is reaped and released from the own set) {
  auto before = reaper::owned_count();
  std::vector<pid_t> pids;
  for (int i = 0; i < 20; ++i) {
    auto c = start_owned("sleep 30");
    CAF_REQUIRE(c.has_value());
    pids.push_back((*c)->pid());
    CAF_CHECK_EQUAL(reaper::owned_count(), before + 1);
    // Dropping the last reference kills and reaps the running child.
  }
  CAF_CHECK_EQUAL(reaper::owned_count(), before);
  CAF_CHECK_EQUAL(children_among(pids), 0u);
}

CAF_TEST(a child reaped by its exit watch is released once) {
  auto before = reaper::owned_count();
  for (int i = 0; i < 20; ++i) {
    auto c = start_owned("exit 0");
    CAF_REQUIRE(c.has_value());
    CAF_REQUIRE(exit_of(*c).has_value());
    // Released before the report; the destructor must not release again.
    CAF_CHECK_EQUAL(reaper::owned_count(), before);
  }
  CAF_CHECK_EQUAL(reaper::owned_count(), before);
}

// Issue 12: launches shared one process-wide mutex, held across the
// launch, so they ran one after the other.
CAF_TEST(launches run side by side) {
  std::promise<void> second;
  auto second_done = second.get_future();
  std::thread other;
  auto first = reaper::launch_owned([&] {
    // While this launch is in progress, another one starts and must end
    // first; with launches serialised it would wait for this one.
    other = std::thread{[&] {
      auto c = start_owned("exit 0");
      CAF_CHECK(c.has_value());
      if (c)
        CAF_CHECK(exit_of(*c).has_value());
      second.set_value();
    }};
    auto ready = second_done.wait_for(std::chrono::seconds(30));
    CAF_CHECK(ready == std::future_status::ready);
    return child_process::start(reactor, shell("exit 0"));
  });
  other.join();
  CAF_REQUIRE(first.has_value());
  CAF_CHECK(exit_of(*first).has_value());
}

CAF_TEST(a shared environment block is merged with the launch own entries) {
  // The block and `env` are each in the order of their names; an entry of
  // `env` replaces the block's entry of the same name, wherever it falls.
  sandbox::launch_spec spec;
  spec.executable = "/usr/bin/env";
  spec.argv = {"env"};
  spec.cwd = "/";
  spec.env_block = std::make_shared<const std::vector<std::string>>(
    std::vector<std::string>{"A=block", "B=block", "D=block", "D2=x=y",
                             "Z=block"});
  spec.env
    = {{"0", "own"}, {"B", "own"}, {"C", "own"}, {"Z", "own"}, {"ZZ", "own"}};
  auto child = sandbox::launch(spec);
  SANDBOX_REQUIRE_OK(child);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(child->stdout_r.get(), buf, sizeof(buf))) > 0)
    out.append(buf, static_cast<size_t>(n));
  int status = -1;
  CAF_CHECK_EQUAL(::waitpid(child->pid, &status, 0), child->pid);
  CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CAF_CHECK_EQUAL(out, "0=own\nA=block\nB=own\nC=own\nD=block\nD2=x=y\n"
                       "Z=own\nZZ=own\n");
  // Without a block, `env` alone.
  spec.env_block = nullptr;
  spec.env = {{"ONLY", "1"}};
  auto alone = sandbox::launch(spec);
  SANDBOX_REQUIRE_OK(alone);
  out.clear();
  while ((n = ::read(alone->stdout_r.get(), buf, sizeof(buf))) > 0)
    out.append(buf, static_cast<size_t>(n));
  CAF_CHECK_EQUAL(::waitpid(alone->pid, &status, 0), alone->pid);
  CAF_CHECK_EQUAL(out, "ONLY=1\n");
}

CAF_TEST(a busy stream gets a larger pipe and larger reads) {
  // head blocks on its full stdout pipe before anything reads it, so the
  // first read takes a full buffer: the stream is busy from then on.
  const size_t total = size_t{16} << 20;
  sandbox::launch_spec spec;
  spec.executable = "/usr/bin/head";
  spec.argv = {"head", "-c", std::to_string(total), "/dev/zero"};
  spec.cwd = "/";
  auto c = sandbox::reaper::launch_owned(
    [&] { return child_process::start(reactor, spec); });
  SANDBOX_REQUIRE_OK(c);
  auto pid = (*c)->pid();
  CAF_REQUIRE(wait_for_wchan(pid, "pipe_write"));
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<size_t> sizes;
  bool free_flow = false;
  bool eof = false;
  std::promise<sandbox::result<int>> exited;
  auto reported = exited.get_future();
  auto* child = c->get();
  sandbox::child_events ev;
  ev.on_output = [&](sandbox::stream_kind stream, std::string data) {
    std::lock_guard<std::mutex> guard{mtx};
    sizes.push_back(data.size());
    if (free_flow)
      child->grant(stream);
    cv.notify_all();
  };
  // The report comes after both streams ended.
  ev.on_finished = [&](sandbox::result<int> status, sandbox::kept_output) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      eof = true;
    }
    exited.set_value(std::move(status));
  };
  (*c)->activate(std::move(ev));
  {
    // Every credit of the window is used: reading pauses, head is alive.
    std::unique_lock<std::mutex> lock{mtx};
    cv.wait(lock, [&] { return sizes.size() == child_process::window; });
  }
  CAF_CHECK_EQUAL(sizes.front(), child_process::read_size);
  sandbox::unique_fd pidfd{static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))};
  CAF_REQUIRE(pidfd);
  sandbox::unique_fd out{
    static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), 1, 0))};
  CAF_REQUIRE(out);
  auto pipe_size = ::fcntl(out.get(), F_GETPIPE_SZ);
  out.reset(); // Our copy of the write end would keep the stream open.
  CAF_CHECK_GREATER(pipe_size, static_cast<int>(child_process::read_size));
  CAF_CHECK_LESS_OR_EQUAL(pipe_size,
                          static_cast<int>(child_process::max_read_size));
  {
    std::lock_guard<std::mutex> guard{mtx};
    free_flow = true;
    for (int i = 0; i < child_process::window; ++i)
      child->grant(sandbox::stream_kind::out);
  }
  auto status = reported.get();
  SANDBOX_REQUIRE_OK(status);
  CAF_CHECK(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  std::unique_lock<std::mutex> lock{mtx};
  CAF_CHECK(eof);
  size_t sum = 0;
  size_t largest = 0;
  for (auto n : sizes) {
    sum += n;
    largest = std::max(largest, n);
  }
  CAF_CHECK_EQUAL(sum, total);
  CAF_CHECK_GREATER(largest, child_process::read_size);
  CAF_CHECK_LESS_OR_EQUAL(largest, child_process::max_read_size);
  lock.unlock();
  (*c)->shutdown();
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

/// What `on_finished` reported, and what else was called.
struct finished_report {
  sandbox::result<int> status = 0;
  sandbox::kept_output kept;
  /// Streamed only: the pieces, and how many came before the report.
  std::string streamed[2];
  int outputs = 0;
  int outputs_before_report = -1;
  /// Reports received until the callbacks were dropped.
  int reports = 0;
  pid_t pid = 0;
};

/// Runs `command` with one report at the end (`on_finished`) and waits
/// for it: its output kept on the reactor (`keep_cap` bytes per stream),
/// or streamed to `on_output` (granting each piece) when `stream` is set.
finished_report run_finished(fixture& f, const std::string& command,
                             uint64_t keep_cap,
                             std::chrono::milliseconds linger, bool stream) {
  auto c = f.start_owned(command);
  CAF_REQUIRE(c.has_value());
  std::mutex mtx;
  finished_report out;
  std::promise<void> done;
  auto finished = done.get_future();
  sandbox::child_events ev;
  ev.keep_cap = keep_cap;
  ev.linger = linger;
  auto* child = c->get();
  if (stream)
    ev.on_output = [&, child](sandbox::stream_kind s, std::string data) {
      {
        std::lock_guard<std::mutex> guard{mtx};
        ++out.outputs;
        out.streamed[s == sandbox::stream_kind::out ? 0 : 1] += data;
      }
      child->grant(s);
    };
  ev.on_finished = [&](sandbox::result<int> status, sandbox::kept_output k) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      out.status = std::move(status);
      out.kept = std::move(k);
      out.outputs_before_report = out.outputs;
      if (++out.reports > 1)
        return;
    }
    done.set_value();
  };
  out.pid = (*c)->pid();
  (*c)->activate(std::move(ev));
  finished.wait();
  (*c)->shutdown();
  std::lock_guard<std::mutex> guard{mtx};
  return out;
}

finished_report
run_kept(fixture& f, const std::string& command, uint64_t keep_cap,
         std::chrono::milliseconds linger = std::chrono::milliseconds{0}) {
  return run_finished(f, command, keep_cap, linger, false);
}

finished_report
run_streamed(fixture& f, const std::string& command,
             std::chrono::milliseconds linger = std::chrono::milliseconds{0}) {
  return run_finished(f, command, 0, linger, true);
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(child_kept_output_tests, fixture)

CAF_TEST(output nobody streams is kept on the reactor and reported once) {
  // More than one read of each stream (256 KiB of stdout), within the cap.
  auto r = run_kept(*this,
                    "head -c 262144 /dev/zero | tr '\\0' a; "
                    "printf err >&2; exit 7",
                    1 << 20);
  CAF_REQUIRE(r.status.has_value());
  CAF_CHECK(WIFEXITED(*r.status));
  CAF_CHECK_EQUAL(WEXITSTATUS(*r.status), 7);
  CAF_CHECK_EQUAL(r.kept.out, std::string(262144, 'a'));
  CAF_CHECK_EQUAL(r.kept.err, "err");
  CAF_CHECK(!r.kept.truncated);
  CAF_CHECK_EQUAL(r.kept.dropped_bytes, 0u);
  CAF_CHECK_EQUAL(r.reports, 1);
}

CAF_TEST(kept output beyond the cap keeps its head and tail) {
  auto r = run_kept(*this, "printf 0123456789", 4);
  CAF_REQUIRE(r.status.has_value());
  CAF_CHECK(r.kept.truncated);
  CAF_CHECK_EQUAL(r.kept.dropped_bytes, 6u);
  CAF_CHECK_EQUAL(r.kept.out, "01" + sandbox::capped_output::marker(6) + "89");
}

CAF_TEST(
  a background job holding the pipes delays the report by the linger only) {
  // The child exits at once; its background job keeps both pipes open for
  // far longer than the linger.
  auto r = run_kept(*this, "echo before; sleep 30 & exit 0", 1 << 20,
                    std::chrono::milliseconds{50});
  CAF_REQUIRE(r.status.has_value());
  CAF_CHECK_EQUAL(WEXITSTATUS(*r.status), 0);
  CAF_CHECK_EQUAL(r.kept.out, "before\n");
  CAF_CHECK_EQUAL(r.reports, 1);
  // The job is left to whoever owns the group (the session's sweep).
  CAF_CHECK_EQUAL(::kill(-r.pid, SIGKILL), 0);
}

CAF_TEST(streamed output comes piece by piece and then one report) {
  auto r = run_streamed(*this, "head -c 262144 /dev/zero | tr '\\0' a; "
                               "printf err >&2; exit 7");
  CAF_REQUIRE(r.status.has_value());
  CAF_CHECK_EQUAL(WEXITSTATUS(*r.status), 7);
  CAF_CHECK_EQUAL(r.streamed[0], std::string(262144, 'a'));
  CAF_CHECK_EQUAL(r.streamed[1], "err");
  // Every piece before the report, which keeps nothing itself.
  CAF_CHECK_GREATER(r.outputs, 1);
  CAF_CHECK_EQUAL(r.outputs_before_report, r.outputs);
  CAF_CHECK_EQUAL(r.kept.out, "");
  CAF_CHECK_EQUAL(r.kept.err, "");
  CAF_CHECK_EQUAL(r.reports, 1);
}

CAF_TEST(quiet streams of children side by side keep their own bytes) {
  // Each child's streams are read on readiness into one buffer of the
  // reactor thread: children writing at once, in many small writes and
  // bursts on both streams, must each get exactly their own bytes.
  std::vector<std::future<finished_report>> runs;
  for (char c : {'a', 'b', 'c'})
    runs.push_back(std::async(std::launch::async, [this, c] {
      return run_streamed(
        *this, std::string{"for i in $(seq 1 200); do printf "} + c
                 + "; printf " + static_cast<char>(c - 'a' + 'x')
                 + " >&2; done; head -c 300000 /dev/zero | tr '\\0' " + c);
    }));
  for (size_t i = 0; i < runs.size(); ++i) {
    auto r = runs[i].get();
    SANDBOX_REQUIRE_OK(r.status);
    char c = static_cast<char>('a' + i);
    CAF_CHECK_EQUAL(r.streamed[0], std::string(200 + 300000, c));
    CAF_CHECK_EQUAL(r.streamed[1],
                    std::string(200, static_cast<char>('x' + i)));
  }
}

CAF_TEST(output that comes after a quiet spell is read) {
  sandbox::test::temp_dir dir;
  auto fifo = dir.path + "/gate";
  CAF_REQUIRE_EQUAL(::mkfifo(fifo.c_str(), 0600), 0);
  // The child waits on the FIFO with nothing written: its stream is
  // waited on before any byte exists. The test opens the FIFO's write
  // end once the child is started, and closes it.
  std::thread gate{
    [&] { sandbox::unique_fd w{::open(fifo.c_str(), O_WRONLY | O_CLOEXEC)}; }};
  auto r = run_streamed(*this, "cat '" + fifo + "' > /dev/null; echo late");
  gate.join();
  SANDBOX_REQUIRE_OK(r.status);
  CAF_CHECK_EQUAL(r.streamed[0], "late\n");
}

CAF_TEST(a background job delays a streamed report by the linger only) {
  auto r = run_streamed(*this, "echo before; sleep 30 & exit 0",
                        std::chrono::milliseconds{50});
  CAF_REQUIRE(r.status.has_value());
  CAF_CHECK_EQUAL(WEXITSTATUS(*r.status), 0);
  CAF_CHECK_EQUAL(r.streamed[0], "before\n");
  CAF_CHECK_EQUAL(r.reports, 1);
  CAF_CHECK_EQUAL(::kill(-r.pid, SIGKILL), 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
