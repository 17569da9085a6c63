#define CAF_SUITE actors.spawn
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <signal.h>

#include "fixture.hpp"

using sandbox::exit_reason;

CAF_TEST_FIXTURE_SCOPE(spawn_tests, sandbox::test::node_fixture)

CAF_TEST(S10 a spawned process takes stdin and reports its exit) {
  auto s = make_session();
  auto p = s.spawn(std::string{sandbox::test::test_child()} + " echo");
  SANDBOX_REQUIRE_OK(p);
  CAF_CHECK(p->pid() > 0);
  CAF_REQUIRE(p->write_stdin("hello ").has_value());
  CAF_REQUIRE(p->write_stdin(std::string("bin\0ary", 7)).has_value());
  CAF_REQUIRE(p->close_stdin().has_value());
  auto r = p->wait();
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  CAF_CHECK(r->reason == exit_reason::exited);
  CAF_CHECK_EQUAL(r->stdout_data, std::string("hello bin\0ary", 13));
  // Waiting again gives the same result.
  auto again = p->wait();
  SANDBOX_REQUIRE_OK(again);
  CAF_CHECK_EQUAL(again->stdout_data, r->stdout_data);
}

CAF_TEST(S10 kill 9 of a spawned process reports 137) {
  auto s = make_session();
  auto p = s.spawn("sleep 30");
  SANDBOX_REQUIRE_OK(p);
  CAF_REQUIRE(p->kill(SIGKILL).has_value());
  auto r = p->wait();
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 137);
  CAF_CHECK(r->reason == exit_reason::signalled);
}

CAF_TEST(S10 kill defaults to SIGTERM) {
  auto s = make_session();
  auto p = s.spawn("sleep 30");
  SANDBOX_REQUIRE_OK(p);
  CAF_REQUIRE(p->kill().has_value());
  auto r = p->wait();
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 143);
}

CAF_TEST(S10 a bad signal number is invalid_argument) {
  auto s = make_session();
  auto p = s.spawn("sleep 30");
  SANDBOX_REQUIRE_OK(p);
  auto k = p->kill(999);
  CAF_REQUIRE(!k.has_value());
  CAF_CHECK(k.error().code == sandbox::errc::invalid_argument);
  CAF_CHECK(k.error().message.find("999") != std::string::npos);
  s.stop();
}

CAF_TEST(S10 writing to an exited process fails cleanly) {
  auto s = make_session();
  auto p = s.spawn("exit 0");
  SANDBOX_REQUIRE_OK(p);
  CAF_REQUIRE(p->wait().has_value());
  auto w = p->write_stdin("late");
  CAF_REQUIRE(!w.has_value());
  CAF_CHECK(w.error().code == sandbox::errc::invalid_argument);
  CAF_CHECK(w.error().message.find("exited") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
