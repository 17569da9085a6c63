#define CAF_SUITE actors.processes
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "fixture.hpp"
#include "helpers/byte_pattern.hpp"

using namespace std::chrono_literals;
using sandbox::exit_reason;
using sandbox::stream_kind;
using sandbox::actors::process_options;
using sandbox::actors::process_output;
using sandbox::test::numbered_lines;

namespace {

/// Every byte of `id`'s output, read `step` bytes at a time from `from`
/// until it has ended; `gaps` adds up what was no longer kept.
std::string read_all(sandbox::actors::blocking_session& s,
                     const std::string& id, uint64_t step, uint64_t& gaps,
                     uint64_t from = 0) {
  std::string out;
  gaps = 0;
  for (;;) {
    auto r = s.read_process(id, from, 10s, step);
    if (!r)
      CAF_FAIL("read of " << id << " failed: " << r.error().message);
    CAF_REQUIRE(r->next_offset - r->offset <= step);
    gaps += r->gap;
    for (auto& c : r->chunks)
      out += c.data;
    from = r->next_offset;
    if (!r->running && r->next_offset == r->offset)
      return out;
  }
}

/// Starts `count` processes `true` one after the other, each waited for.
void start_and_wait(sandbox::actors::blocking_session& s, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    auto p = s.start_process("true");
    SANDBOX_REQUIRE_OK(p);
    SANDBOX_REQUIRE_OK(s.wait_process(p->id, 10s));
  }
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(process_tests, sandbox::test::node_fixture)

CAF_TEST(start returns at once and the output keeps its streams and order) {
  auto s = make_session();
  auto p = s.start_process("echo out; echo err >&2; echo again");
  SANDBOX_REQUIRE_OK(p);
  CAF_CHECK_EQUAL(p->id, "p-1");
  CAF_CHECK(p->pid > 0);
  CAF_CHECK(!p->stdin_open);
  auto done = s.wait_process("p-1", 10s);
  SANDBOX_REQUIRE_OK(done);
  CAF_REQUIRE(!done->running);
  CAF_CHECK_EQUAL(done->exit_code, 0);
  CAF_CHECK_EQUAL(done->next_offset, 14u);
  auto r = s.read_process("p-1", 0);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(!r->running);
  CAF_CHECK_EQUAL(r->offset, 0u);
  CAF_CHECK_EQUAL(r->next_offset, 14u);
  CAF_CHECK_EQUAL(r->gap, 0u);
  std::string out;
  std::string err;
  for (auto& c : r->chunks)
    (c.stream == stream_kind::out ? out : err) += c.data;
  CAF_CHECK_EQUAL(out, "out\nagain\n");
  CAF_CHECK_EQUAL(err, "err\n");
  // A second id counts up.
  auto q = s.start_process("true");
  SANDBOX_REQUIRE_OK(q);
  CAF_CHECK_EQUAL(q->id, "p-2");
}

CAF_TEST(a read waits for the first byte and answers when it comes) {
  auto s = make_session();
  process_options opts;
  opts.open_stdin = true;
  auto p = s.start_process(std::string{sandbox::test::test_child()} + " echo",
                           opts);
  SANDBOX_REQUIRE_OK(p);
  CAF_CHECK(p->stdin_open);
  // Nothing yet: a read without a wait answers at once, empty.
  auto empty = s.read_process(p->id, 0);
  SANDBOX_REQUIRE_OK(empty);
  CAF_CHECK(empty->chunks.empty());
  CAF_CHECK(empty->running);
  CAF_CHECK_EQUAL(empty->next_offset, 0u);
  SANDBOX_REQUIRE_OK(s.write_process(p->id, "ping"));
  // The wait is far longer than the echo takes: the read answers with the
  // bytes, not at the end of its wait (the process still runs).
  auto r = s.read_process(p->id, 0, 60s);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->running);
  std::string got;
  for (auto& c : r->chunks)
    got += c.data;
  CAF_CHECK_EQUAL(got, std::string{"ping"}.substr(0, got.size()));
  CAF_CHECK(!got.empty());
  SANDBOX_REQUIRE_OK(s.close_process_stdin(p->id));
  auto done = s.wait_process(p->id, 10s);
  SANDBOX_REQUIRE_OK(done);
  CAF_CHECK(!done->running);
  CAF_CHECK_EQUAL(done->exit_code, 0);
  uint64_t gaps = 0;
  CAF_CHECK_EQUAL(read_all(s, p->id, 3, gaps), "ping");
  CAF_CHECK_EQUAL(gaps, 0u);
}

CAF_TEST(a read that runs out of time answers empty while the process runs) {
  auto s = make_session();
  auto p = s.start_process("sleep 30");
  SANDBOX_REQUIRE_OK(p);
  auto r = s.read_process(p->id, 0, 50ms);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->running);
  CAF_CHECK(r->chunks.empty());
  auto w = s.wait_process(p->id, 50ms);
  SANDBOX_REQUIRE_OK(w);
  CAF_CHECK(w->running);
  SANDBOX_REQUIRE_OK(s.kill_process(p->id, SIGKILL));
  auto done = s.wait_process(p->id, 10s);
  SANDBOX_REQUIRE_OK(done);
  CAF_CHECK(!done->running);
  CAF_CHECK_EQUAL(done->exit_code, 137);
  CAF_CHECK(done->reason == exit_reason::signalled);
  // Signalling an exited process names it.
  auto again = s.kill_process(p->id, SIGKILL);
  CAF_REQUIRE(!again);
  CAF_CHECK(again.error().code == sandbox::errc::invalid_argument);
  CAF_CHECK(again.error().message.find("p-1 has exited") != std::string::npos);
}

CAF_TEST(readers from any offset get every byte exactly once) {
  auto s = make_session();
  auto expected = numbered_lines(1, 100000);
  process_options opts;
  opts.retain = 4 << 20;
  auto p = s.start_process("seq 1 100000", opts);
  SANDBOX_REQUIRE_OK(p);
  // One reader follows while it runs, in small steps.
  uint64_t gaps = 0;
  CAF_CHECK_EQUAL(read_all(s, p->id, 4096, gaps), expected);
  CAF_CHECK_EQUAL(gaps, 0u);
  // Reading does not consume: another reader from the middle.
  CAF_CHECK_EQUAL(read_all(s, p->id, 65536, gaps, 1000), expected.substr(1000));
  auto info = s.wait_process(p->id, 10s);
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK_EQUAL(info->next_offset, expected.size());
  CAF_CHECK_EQUAL(info->retained_from, 0u);
}

CAF_TEST(output beyond the retention is reported as an exact gap) {
  auto s = make_session();
  auto expected = numbered_lines(1, 10000);
  process_options opts;
  opts.retain = 1000;
  auto p = s.start_process("seq 1 10000", opts);
  SANDBOX_REQUIRE_OK(p);
  SANDBOX_REQUIRE_OK(s.wait_process(p->id, 10s));
  auto r = s.read_process(p->id, 0, 0ms, 1 << 20);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->gap, expected.size() - 1000);
  CAF_CHECK_EQUAL(r->offset, expected.size() - 1000);
  CAF_CHECK_EQUAL(r->next_offset, expected.size());
  std::string got;
  for (auto& c : r->chunks)
    got += c.data;
  CAF_CHECK_EQUAL(got, expected.substr(expected.size() - 1000));
}

CAF_TEST(bad ids offsets and writes are refused naming what is wrong) {
  auto s = make_session();
  auto none = s.read_process("p-7", 0);
  CAF_REQUIRE(!none);
  CAF_CHECK(none.error().code == sandbox::errc::process_not_found);
  CAF_CHECK(none.error().message.find("p-7") != std::string::npos);
  for (auto bad : {"p-0", "x-1", "p-", "p-1x", ""}) {
    auto r = s.kill_process(bad, SIGTERM);
    CAF_REQUIRE(!r);
    CAF_CHECK(r.error().code == sandbox::errc::process_not_found);
  }
  auto p = s.start_process("echo hi");
  SANDBOX_REQUIRE_OK(p);
  SANDBOX_REQUIRE_OK(s.wait_process(p->id, 10s));
  auto past = s.read_process(p->id, 99);
  CAF_REQUIRE(!past);
  CAF_CHECK(past.error().code == sandbox::errc::invalid_argument);
  CAF_CHECK(past.error().message.find("offset 99") != std::string::npos);
  auto late = s.write_process(p->id, "late");
  CAF_REQUIRE(!late);
  CAF_CHECK(late.error().message.find("p-1 has exited") != std::string::npos);
  // A running process started without stdin refuses writes.
  auto q = s.start_process("sleep 30");
  SANDBOX_REQUIRE_OK(q);
  auto closed = s.write_process(q->id, "x");
  CAF_REQUIRE(!closed);
  CAF_CHECK(closed.error().message.find("stdin of process p-2 is closed")
            != std::string::npos);
  auto big = s.start_process("true", process_options{{}, false, 1ull << 40});
  CAF_REQUIRE(!big);
  CAF_CHECK(big.error().code == sandbox::errc::invalid_argument);
  CAF_CHECK(big.error().message.find("retain") != std::string::npos);
  s.stop();
}

CAF_TEST(the list shows running and exited processes in order) {
  auto s = make_session();
  auto a = s.start_process("echo a");
  auto b = s.start_process("sleep 30");
  SANDBOX_REQUIRE_OK(a);
  SANDBOX_REQUIRE_OK(b);
  SANDBOX_REQUIRE_OK(s.wait_process(a->id, 10s));
  auto l = s.processes();
  SANDBOX_REQUIRE_OK(l);
  CAF_REQUIRE_EQUAL(l->size(), 2u);
  CAF_CHECK_EQUAL((*l)[0].id, "p-1");
  CAF_CHECK_EQUAL((*l)[0].command, "echo a");
  CAF_CHECK(!(*l)[0].running);
  CAF_CHECK_EQUAL((*l)[0].next_offset, 2u);
  CAF_CHECK_EQUAL((*l)[1].id, "p-2");
  CAF_CHECK((*l)[1].running);
  s.stop();
}

CAF_TEST(exited processes beyond the bound go oldest first) {
  auto s = make_session();
  auto n = sandbox::actors::max_exited_processes + 2;
  start_and_wait(s, n);
  auto l = s.processes();
  SANDBOX_REQUIRE_OK(l);
  CAF_REQUIRE_EQUAL(l->size(), sandbox::actors::max_exited_processes);
  CAF_CHECK_EQUAL(l->front().id, "p-3");
  CAF_CHECK_EQUAL(l->back().id, "p-" + std::to_string(n));
  auto gone = s.read_process("p-1", 0);
  CAF_REQUIRE(!gone);
  CAF_CHECK(gone.error().message.find("no process p-1") != std::string::npos);
}

CAF_TEST(beyond the bound exited processes whose end was read go first) {
  auto s = make_session();
  // p-1 ends, and nobody reads or waits for its end (a list does not
  // count: it is how a caller learns what to read).
  SANDBOX_REQUIRE_OK(s.start_process("true"));
  for (int i = 0;; ++i) {
    auto l = s.processes();
    SANDBOX_REQUIRE_OK(l);
    if (!l->front().running)
      break;
    CAF_REQUIRE(i < 10000);
    std::this_thread::sleep_for(1ms);
  }
  start_and_wait(s, sandbox::actors::max_exited_processes);
  // One too many: p-2 went, the oldest whose end was read; p-1 is kept.
  auto l = s.processes();
  SANDBOX_REQUIRE_OK(l);
  CAF_REQUIRE_EQUAL(l->size(), sandbox::actors::max_exited_processes);
  CAF_CHECK_EQUAL(l->at(0).id, "p-1");
  CAF_CHECK_EQUAL(l->at(1).id, "p-3");
  auto first = s.wait_process("p-1", 0ms);
  SANDBOX_REQUIRE_OK(first);
  CAF_CHECK(!first->running);
  auto gone = s.read_process("p-2", 0);
  CAF_REQUIRE(!gone);
  CAF_CHECK(gone.error().message.find("no process p-2") != std::string::npos);
}

CAF_TEST(a kill reaches a descendant that left the process group) {
  auto s = make_session();
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  if (info->containment != sandbox::containment_mode::cgroup) {
    CAF_MESSAGE("skipped: the node holds its processes by group, not cgroup");
    return;
  }
  // The background sleep leads a session of its own (as a job of a shell
  // with job control leads a group of its own).
  auto p = s.start_process("setsid sleep 300 & echo $!; wait");
  SANDBOX_REQUIRE_OK(p);
  auto r = s.read_process(p->id, 0, 10s);
  SANDBOX_REQUIRE_OK(r);
  CAF_REQUIRE(!r->chunks.empty());
  auto inner = std::stoi(r->chunks.front().data);
  SANDBOX_REQUIRE_OK(s.kill_process(p->id, SIGTERM));
  auto done = s.wait_process(p->id, 10s);
  SANDBOX_REQUIRE_OK(done);
  CAF_CHECK(!done->running);
  // The sleep got the TERM too: it is gone (reaped as an orphan). Asked
  // inside the session: its pid is the session's (a contained session has
  // a PID namespace of its own).
  auto probe = "kill -0 " + std::to_string(inner) + " 2>/dev/null";
  bool gone = false;
  for (int i = 0; i < 1000 && !gone; ++i) {
    auto r = s.execute(probe);
    SANDBOX_REQUIRE_OK(r);
    gone = r->exit_code != 0;
    if (!gone)
      std::this_thread::sleep_for(10ms);
  }
  CAF_CHECK(gone);
}

CAF_TEST(a stop ends every process of the session) {
  auto s = make_session();
  auto p = s.start_process("sleep 300");
  SANDBOX_REQUIRE_OK(p);
  process_options opts;
  opts.open_stdin = true;
  auto q = s.start_process("cat", opts);
  SANDBOX_REQUIRE_OK(q);
  SANDBOX_REQUIRE_OK(s.stop());
  // The node reaped both: their pids are gone.
  CAF_CHECK(::kill(p->pid, 0) == -1 && errno == ESRCH);
  CAF_CHECK(::kill(q->pid, 0) == -1 && errno == ESRCH);
  auto after = s.read_process(p->id, 0);
  CAF_REQUIRE(!after);
  CAF_CHECK(after.error().code == sandbox::errc::session_stopped);
}

CAF_TEST(the node bounds the output its processes keep together) {
  auto cfg = config();
  cfg.process_retain_total = 3 << 20;
  sandbox::actors::embedded_node small{cfg};
  sandbox::actors::session_config scfg;
  scfg.working_directory = dir.path + "/work";
  scfg.home_directory = dir.path + "/home";
  auto s = sandbox::actors::blocking_session::create(small, scfg);
  SANDBOX_REQUIRE_OK(s);
  process_options two_mib;
  two_mib.retain = 2 << 20;
  auto a = s->start_process("sleep 30", two_mib);
  SANDBOX_REQUIRE_OK(a);
  auto b = s->start_process("sleep 30", two_mib);
  CAF_REQUIRE(!b);
  CAF_CHECK(b.error().code == sandbox::errc::invalid_argument);
  CAF_CHECK(b.error().message.find("at most 3145728 bytes together")
            != std::string::npos);
  // What is left still fits a smaller one.
  process_options one_mib;
  one_mib.retain = 1 << 20;
  SANDBOX_REQUIRE_OK(s->start_process("true", one_mib));
  // A stop gives every reservation back: a new session may use it all.
  SANDBOX_REQUIRE_OK(s->stop());
  auto t = sandbox::actors::blocking_session::create(small, scfg);
  SANDBOX_REQUIRE_OK(t);
  process_options three_mib;
  three_mib.retain = 3 << 20;
  SANDBOX_REQUIRE_OK(t->start_process("true", three_mib));
  SANDBOX_REQUIRE_OK(t->stop());
}

CAF_TEST_FIXTURE_SCOPE_END()
