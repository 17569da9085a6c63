#define CAF_SUITE actors.stop
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <chrono>
#include <optional>
#include <thread>

#include "fixture.hpp"
#include "sandbox/process/reaper.hpp"

using sandbox::errc;
using sandbox::exit_reason;

CAF_TEST_FIXTURE_SCOPE(stop_tests, sandbox::test::node_fixture)

CAF_TEST(S22 stop ends background grandchildren and setsid escapers) {
  auto s = make_session();
  auto marker = this->marker(s);
  CAF_REQUIRE(s.execute("sleep 30 & setsid sleep 31 & "
                        "(setsid sh -c 'sleep 32 &' &) ; true")
                .has_value());
  auto p = s.spawn("sleep 33");
  SANDBOX_REQUIRE_OK(p);
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  // The intermediate `sh -c` of the double fork may or may not be alive
  // at the sweep: four or five processes.
  CAF_CHECK(receipt->ended >= 4u);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
  CAF_CHECK_EQUAL(sandbox::test::processes_with(marker), 0u);
  auto waited = p->wait();
  SANDBOX_REQUIRE_OK(waited);
  CAF_CHECK(waited->reason == exit_reason::stopped);
}

CAF_TEST(S22 executions in flight end with exit reason stopped) {
  auto s = make_session();
  std::optional<sandbox::result<sandbox::exec_result>> r;
  auto other = sandbox::actors::blocking_session{node.system(), s.handle()};
  r = s.execute_streaming("echo started; sleep 30", {},
                          [&](const sandbox::output_chunk&) {
                            // Stop from inside: the command is running.
                            CAF_CHECK(other.stop().has_value());
                          });
  SANDBOX_REQUIRE_OK(*r);
  CAF_CHECK((*r)->reason == exit_reason::stopped);
  CAF_CHECK_EQUAL((*r)->stdout_data, "started\n");
}

CAF_TEST(S22 children that ignore SIGTERM are killed after the grace) {
  auto s = make_session();
  auto other = sandbox::actors::blocking_session{node.system(), s.handle()};
  // The child prints "ready" once SIGTERM is ignored; the stop is sent from
  // the chunk callback after that line, so SIGTERM surely finds the handler
  // installed and only SIGKILL can end the child.
  std::string seen;
  std::optional<sandbox::result<sandbox::stop_receipt>> receipt;
  auto r = s.execute_streaming(std::string{sandbox::test::test_child()}
                                 + " ignore-term 30000",
                               {}, [&](const sandbox::output_chunk& c) {
                                 seen += c.data;
                                 if (!receipt && seen == "ready\n")
                                   receipt = other.stop();
                               });
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->reason == exit_reason::stopped);
  CAF_REQUIRE(receipt.has_value());
  SANDBOX_REQUIRE_OK(*receipt);
  CAF_CHECK_EQUAL((*receipt)->survivors, 0u);
  CAF_CHECK((*receipt)->ended >= 1u);
  CAF_CHECK((*receipt)->killed >= 1u);
}

CAF_TEST(S22 stop is idempotent and later operations fail) {
  auto s = make_session();
  auto first = s.stop();
  auto second = s.stop();
  SANDBOX_REQUIRE_OK(first);
  SANDBOX_REQUIRE_OK(second);
  CAF_CHECK_EQUAL(first->ended, second->ended);
  auto r = s.execute("true");
  CAF_REQUIRE(!r.has_value());
  CAF_CHECK(r.error().code == errc::session_stopped);
  auto c = s.execute_code("print(1)", "python3");
  CAF_REQUIRE(!c.has_value());
  CAF_CHECK(c.error().code == errc::session_stopped);
  auto p = s.spawn("true");
  CAF_REQUIRE(!p.has_value());
  CAF_CHECK(p.error().code == errc::session_stopped);
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(info->stopped);
}

CAF_TEST(S22 stop leaves no zombie behind) {
  auto s = make_session();
  CAF_REQUIRE(s.execute("sleep 30 & setsid sleep 30 & true").has_value());
  CAF_REQUIRE(s.stop().has_value());
  // The sleeps, killed by the stop, become zombies of this process when it
  // is a subreaper (the process-group mode): the node's reaper reaps them
  // after their SIGCHLD, within its scan interval. The test reaps nothing
  // itself; it waits for the node's reaping, bounded.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (sandbox::test::zombie_children() > 0
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(sandbox::reaper::scan_interval);
  CAF_CHECK_EQUAL(sandbox::test::zombie_children(), 0u);
}

CAF_TEST(stopping a session with 256 running children ends them all) {
  auto s = make_session();
  auto marker = this->marker(s);
  std::vector<sandbox::actors::blocking_process> procs;
  for (int i = 0; i < 256; ++i) {
    auto p = s.spawn(i % 2 == 0 ? "sleep 30" : "sleep 30 & sleep 31");
    SANDBOX_REQUIRE_OK(p);
    procs.push_back(std::move(*p));
  }
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  // Every child, plus the background grandchild of every second one.
  CAF_CHECK(receipt->ended >= 256u + 128u);
  CAF_MESSAGE("ended " << receipt->ended << ", killed " << receipt->killed);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
  CAF_CHECK_EQUAL(sandbox::test::processes_with(marker), 0u);
}

CAF_TEST_FIXTURE_SCOPE_END()
