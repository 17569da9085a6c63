#define CAF_SUITE actors.cancel
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include "fixture.hpp"

using sandbox::errc;
using sandbox::exec_options;
using sandbox::exit_reason;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(cancel_tests, sandbox::test::node_fixture)

CAF_TEST(cancel answers false when nothing runs under the key) {
  auto s = make_session();
  auto cancelled = s.cancel("k");
  SANDBOX_REQUIRE_OK(cancelled);
  CAF_CHECK(!*cancelled);
  exec_options opts;
  opts.cancel_key = "k";
  auto p = s.spawn("true", opts);
  SANDBOX_REQUIRE_OK(p);
  auto r = p->wait();
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  // The process has exited: there is nothing left to cancel, and it no
  // longer counts as a running child.
  cancelled = s.cancel("k");
  SANDBOX_REQUIRE_OK(cancelled);
  CAF_CHECK(!*cancelled);
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK_EQUAL(info->children, 0u);
  auto e = s.execute("true", opts);
  SANDBOX_REQUIRE_OK(e);
  cancelled = s.cancel("k");
  SANDBOX_REQUIRE_OK(cancelled);
  CAF_CHECK(!*cancelled);
}

CAF_TEST(a second running execution with the same key is refused) {
  auto s = make_session();
  exec_options opts;
  opts.cancel_key = "dup-key";
  auto first = s.spawn("sleep 30", opts);
  SANDBOX_REQUIRE_OK(first);
  auto second = s.spawn("touch spawned", opts);
  CAF_REQUIRE(!second);
  CAF_CHECK(second.error().code == errc::invalid_argument);
  CAF_CHECK(contains(second.error().message, "dup-key"));
  auto third = s.execute("touch spawned", opts);
  CAF_REQUIRE(!third);
  CAF_CHECK(third.error().code == errc::invalid_argument);
  auto probe = s.execute("test -e spawned");
  SANDBOX_REQUIRE_OK(probe);
  CAF_CHECK_NOT_EQUAL(probe->exit_code, 0);
  // The one running execution is the one the key cancels.
  auto cancelled = s.cancel("dup-key");
  SANDBOX_REQUIRE_OK(cancelled);
  CAF_CHECK(*cancelled);
  auto r = first->wait();
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->reason == exit_reason::cancelled);
  CAF_CHECK_EQUAL(r->exit_code, 130);
  // Once it has ended, the key is free again.
  auto again = s.execute("echo again", opts);
  SANDBOX_REQUIRE_OK(again);
  CAF_CHECK_EQUAL(again->stdout_data, "again\n");
}

CAF_TEST_FIXTURE_SCOPE_END()
