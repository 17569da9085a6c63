#define CAF_SUITE actors.execute
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <optional>

#include "fixture.hpp"

using namespace std::chrono_literals;
using sandbox::exec_options;
using sandbox::exit_reason;
using sandbox::stream_kind;

namespace {

// §4 needs a variable in the node's process environment. setenv races with
// any thread reading the environment (the node's threads do), so it runs
// during static initialisation, while the process has one thread.
const bool r4_node_env = ::setenv("SANDBOX_R4_NODE", "node", 1) == 0;

} // namespace

CAF_TEST_FIXTURE_SCOPE(execute_tests, sandbox::test::node_fixture)

CAF_TEST(S1 a command streams its chunks then exactly one result) {
  auto s = make_session();
  std::string out;
  std::string err;
  int chunks = 0;
  auto r = s.execute_streaming("echo hello; echo oops >&2; exit 3", {},
                               [&](const sandbox::output_chunk& c) {
                                 ++chunks;
                                 (c.stream == stream_kind::out ? out : err)
                                   += c.data;
                               });
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 3);
  CAF_CHECK(r->reason == exit_reason::exited);
  CAF_CHECK_EQUAL(out, "hello\n");
  CAF_CHECK_EQUAL(err, "oops\n");
  CAF_CHECK_EQUAL(r->stdout_data, "hello\n");
  CAF_CHECK_EQUAL(r->stderr_data, "oops\n");
  CAF_CHECK(chunks >= 2);
  CAF_CHECK(!r->truncated);
  CAF_CHECK_EQUAL(r->dropped_bytes, 0u);
}

CAF_TEST(S1 commands run with stdin closed) {
  auto s = make_session();
  auto r = s.execute("cat; echo done");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "done\n");
}

CAF_TEST(S2 cwd defaults to the session directory and resolves relatives) {
  auto s = make_session();
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  auto wd = info->working_directory;
  auto r = s.execute("pwd");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, wd + "\n");
  CAF_REQUIRE(s.execute("mkdir -p sub/dir").has_value());
  exec_options opts;
  opts.cwd = "sub/dir";
  r = s.execute("pwd", opts);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, wd + "/sub/dir\n");
}

CAF_TEST(S2 a missing cwd is an error before anything is spawned) {
  auto s = make_session();
  exec_options opts;
  opts.cwd = "no/such/dir";
  auto r = s.execute("touch spawned", opts);
  CAF_REQUIRE(!r.has_value());
  CAF_CHECK(r.error().code == sandbox::errc::path_not_found);
  CAF_CHECK(r.error().message.find("no/such/dir") != std::string::npos);
  auto probe = s.execute("test -e spawned");
  SANDBOX_REQUIRE_OK(probe);
  CAF_CHECK_NOT_EQUAL(probe->exit_code, 0);
}

CAF_TEST(S3 a bad env name is invalid_argument naming the key) {
  auto s = make_session();
  for (std::string bad :
       std::vector<std::string>{"1ABC", "A-B", "A B", "$(x)", "", "A=B",
                                std::string("A\0B", 3), "É"}) {
    exec_options opts;
    opts.env[bad] = "v";
    auto r = s.execute("touch spawned", opts);
    CAF_REQUIRE(!r.has_value());
    CAF_CHECK(r.error().code == sandbox::errc::invalid_argument);
  }
  exec_options opts;
  opts.env["BAD-NAME"] = "v";
  auto r = s.execute("true", opts);
  CAF_REQUIRE(!r.has_value());
  CAF_CHECK(r.error().message.find("BAD-NAME") != std::string::npos);
  auto probe = s.execute("test -e spawned");
  SANDBOX_REQUIRE_OK(probe);
  CAF_CHECK_NOT_EQUAL(probe->exit_code, 0);
}

CAF_TEST(S3 env values are passed verbatim without interpolation) {
  auto s = make_session();
  exec_options opts;
  opts.env["V"] = "$(echo injected) `id` 'q' \"d\" \n; $HOME";
  auto r = s.execute("printf %s \"$V\"", opts);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, opts.env["V"]);
}

CAF_TEST(S4 env precedence is node then HOME then session then call) {
  // SANDBOX_R4_NODE is set before main (see `r4_node_env`). The runtime
  // snapshots the node env at creation: make a fresh node.
  CAF_REQUIRE(r4_node_env);
  sandbox::actors::embedded_node fresh{sandbox::test::suite_runtime_config()};
  sandbox::actors::session_config cfg;
  cfg.working_directory = dir.path + "/w4";
  cfg.home_directory = dir.path + "/h4";
  cfg.env = {{"SESSION_ONLY", "s"}, {"BOTH", "session"}};
  auto s = sandbox::actors::blocking_session::create(fresh, cfg);
  SANDBOX_REQUIRE_OK(s);
  exec_options opts;
  opts.env = {{"BOTH", "call"}, {"CALL_ONLY", "c"}};
  auto r = s->execute(
    "echo $SANDBOX_R4_NODE $HOME $SESSION_ONLY $BOTH $CALL_ONLY", opts);
  SANDBOX_REQUIRE_OK(r);
  auto info = s->info();
  SANDBOX_REQUIRE_OK(info);
  // A contained session's base is a fixed set, not the node's environment
  // (§4): the node's variable is not there.
  auto node = sandbox::test::contained_run() ? "" : "node ";
  CAF_CHECK_EQUAL(r->stdout_data, node + info->home_directory + " s call c\n");
  opts.env = {{"HOME", "/call/home"}};
  r = s->execute("echo $HOME", opts);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "/call/home\n");
  // The leased port is in the base layer, beside HOME.
  r = s->execute("echo $SANDBOX_PORT");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, std::to_string(info->port) + "\n");
  s->stop();
}

CAF_TEST(S5 a timeout ends the group and keeps the partial output) {
  auto s = make_session();
  auto r = sandbox::test::run_until_streamed(
    [&s](const exec_options& o, const sandbox::actors::chunk_callback& f) {
      return s.execute_streaming("echo before; sleep 30; echo after", o, f);
    },
    "before\n", 300ms);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->reason == exit_reason::timeout);
  CAF_CHECK_EQUAL(r->exit_code, 124);
  CAF_CHECK_EQUAL(r->stdout_data, "before\n");
}

CAF_TEST(S5 a timeout ends a background grandchild and a setsid escaper) {
  auto s = make_session();
  auto marker = this->marker(s);
  // "started" comes after both background jobs were forked.
  auto r = sandbox::test::run_until_streamed(
    [&s](const exec_options& o, const sandbox::actors::chunk_callback& f) {
      return s.execute_streaming(
        "sleep 30 & setsid sleep 31 & echo started; wait", o, f);
    },
    "started\n", 300ms);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->reason == exit_reason::timeout);
  CAF_CHECK_EQUAL(r->stdout_data, "started\n");
  CAF_CHECK_EQUAL(sandbox::test::processes_with(marker), 0u);
}

CAF_TEST(S5 cancel ends the execution with exit code 130) {
  auto s = make_session();
  auto marker = this->marker(s);
  exec_options opts;
  opts.cancel_key = "job-1";
  std::optional<sandbox::result<sandbox::exec_result>> r;
  bool cancelled = false;
  r = s.execute_streaming("echo started; sleep 30 & setsid sleep 31 & wait",
                          opts, [&](const sandbox::output_chunk&) {
                            if (!cancelled) {
                              // Cancel from the chunk callback: the command is
                              // surely running.
                              cancelled = true;
                              auto other = sandbox::actors::blocking_session{
                                node.system(), s.handle()};
                              auto done = other.cancel("job-1");
                              SANDBOX_CHECK_OK(done);
                              CAF_CHECK(done && *done);
                            }
                          });
  SANDBOX_REQUIRE_OK(*r);
  CAF_CHECK((*r)->reason == exit_reason::cancelled);
  CAF_CHECK_EQUAL((*r)->exit_code, 130);
  CAF_CHECK_EQUAL((*r)->stdout_data, "started\n");
  CAF_CHECK_EQUAL(sandbox::test::processes_with(marker), 0u);
  auto again = s.cancel("job-1");
  SANDBOX_REQUIRE_OK(again);
  CAF_CHECK(!*again);
}

CAF_TEST(S6 a child ended by a signal reports 128 plus signo) {
  auto s = make_session();
  auto r = s.execute("kill -9 $$");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 137);
  CAF_CHECK(r->reason == exit_reason::signalled);
  r = s.execute("kill -TERM $$");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 143);
}

CAF_TEST(S8 a 4 byte UTF - 8 char across a pipe buffer boundary is unsplit) {
  auto s = make_session();
  std::vector<std::string> chunks;
  auto r = s.execute_streaming(
    std::string{sandbox::test::test_child()} + " split-utf8", {},
    [&](const sandbox::output_chunk& c) { chunks.push_back(c.data); });
  SANDBOX_REQUIRE_OK(r);
  std::string all;
  for (auto& c : chunks) {
    all += c;
    // No chunk may end inside the emoji's 4 bytes.
    auto n = c.size();
    CAF_CHECK(!(n >= 1 && c[n - 1] == '\xF0'));
    CAF_CHECK(!(n >= 2 && c.compare(n - 2, 2, "\xF0\x9F") == 0));
    CAF_CHECK(!(n >= 3 && c.compare(n - 3, 3, "\xF0\x9F\x98") == 0));
  }
  CAF_CHECK_EQUAL(all, std::string(65534, 'a') + "\xF0\x9F\x98\x80\n");
}

CAF_TEST(S8 binary output arrives byte exact) {
  auto s = make_session();
  std::string all;
  auto r = s.execute_streaming(
    std::string{sandbox::test::test_child()} + " all-bytes", {},
    [&](const sandbox::output_chunk& c) { all += c.data; });
  SANDBOX_REQUIRE_OK(r);
  CAF_REQUIRE_EQUAL(all.size(), 256u);
  for (int i = 0; i < 256; ++i)
    CAF_CHECK_EQUAL(static_cast<unsigned char>(all[i]), i);
  CAF_CHECK_EQUAL(r->stdout_data, all);
}

CAF_TEST(S9 retained output keeps head and tail and counts dropped bytes) {
  auto s = make_session();
  exec_options opts;
  opts.output_cap = 1000;
  uint64_t streamed = 0;
  auto r = s.execute_streaming(
    "echo FIRST; head -c 100000 /dev/zero | tr '\\0' x; echo; echo LAST", opts,
    [&](const sandbox::output_chunk& c) { streamed += c.data.size(); });
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->truncated);
  // Streaming goes on past the cap.
  CAF_CHECK_EQUAL(streamed, 6u + 100000u + 1u + 5u);
  CAF_CHECK_EQUAL(r->dropped_bytes, streamed - 1000u);
  CAF_CHECK_EQUAL(r->stdout_data.substr(0, 6), "FIRST\n");
  CAF_CHECK(r->stdout_data.find("LAST\n") != std::string::npos);
  CAF_CHECK(r->stdout_data.find("dropped") != std::string::npos);
}

CAF_TEST(a background job does not hold the result back) {
  auto s = make_session();
  auto r = s.execute("sleep 30 & echo quick");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "quick\n");
  CAF_CHECK_EQUAL(r->exit_code, 0);
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_EQUAL(receipt->ended, 1u);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
}

CAF_TEST(S2 a timeout out of range is invalid_argument naming the range) {
  auto s = make_session();
  // Negative; one past the largest (1e9 s, as the CLI's --timeout); one
  // whose deadline overflows the clock when added to now (1e10 s timed out
  // at once); the largest representable.
  for (auto bad : {std::chrono::milliseconds{-1},
                   sandbox::max_exec_timeout + std::chrono::milliseconds{1},
                   std::chrono::milliseconds{10'000'000'000'000},
                   std::chrono::milliseconds::max()}) {
    exec_options opts;
    opts.timeout = bad;
    auto check = [&](const sandbox::result<sandbox::exec_result>& r) {
      CAF_REQUIRE(!r.has_value());
      CAF_CHECK(r.error().code == sandbox::errc::invalid_argument);
      const auto& msg = r.error().message;
      CAF_CHECK(msg.find("exec_options.timeout") != std::string::npos);
      CAF_CHECK(msg.find(std::to_string(bad.count())) != std::string::npos);
      CAF_CHECK(msg.find("0 to 1000000000000 ms") != std::string::npos);
    };
    check(s.execute("touch spawned", opts));
    check(s.execute_code("touch spawned", "sh", opts));
    auto p = s.spawn("touch spawned", opts);
    CAF_REQUIRE(!p.has_value());
    CAF_CHECK(p.error().code == sandbox::errc::invalid_argument);
    CAF_CHECK(p.error().message.find("exec_options.timeout")
              != std::string::npos);
  }
  auto probe = s.execute("test -e spawned");
  SANDBOX_REQUIRE_OK(probe);
  CAF_CHECK_NOT_EQUAL(probe->exit_code, 0);
}

CAF_TEST(S2 the largest timeout is accepted and does not expire at once) {
  auto s = make_session();
  exec_options opts;
  opts.timeout = sandbox::max_exec_timeout;
  // `cat` ends when its stdin is closed: a deadline that overflowed would
  // have ended it first, with reason timeout.
  auto p = s.spawn("cat", opts);
  SANDBOX_REQUIRE_OK(p);
  CAF_CHECK(p->write_stdin("x").has_value());
  CAF_CHECK(p->close_stdin().has_value());
  auto r = p->wait();
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->reason == exit_reason::exited);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  CAF_CHECK_EQUAL(r->stdout_data, "x");
}

CAF_TEST(a command containing NUL is rejected before spawning) {
  auto s = make_session();
  auto r = s.execute(std::string("echo a\0b", 8));
  CAF_REQUIRE(!r.has_value());
  CAF_CHECK(r.error().code == sandbox::errc::invalid_argument);
}

CAF_TEST_FIXTURE_SCOPE_END()
