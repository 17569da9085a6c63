#define CAF_SUITE actors.stopped_child
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <chrono>

#include "fixture.hpp"

using namespace std::chrono_literals;
using namespace sandbox;
using namespace sandbox::actors;

namespace {

/// A node whose grace period is far longer than the suite's time limit: a
/// SIGTERM that cannot act makes the test hang (and the suite's watchdog
/// fail it), not pass.
struct fixture {
  test::temp_dir dir;
  embedded_node node{config()};

  static runtime_config config() {
    auto cfg = test::suite_runtime_config();
    cfg.stop.grace = 1h;
    cfg.reap_all_orphans = true;
    return cfg;
  }

  blocking_session make_session() {
    session_config cfg;
    cfg.working_directory = dir.path + "/work";
    cfg.home_directory = dir.path + "/home";
    auto s = blocking_session::create(node, cfg);
    if (!s)
      CAF_FAIL("create failed: " << s.error().message);
    return std::move(*s);
  }
};

/// Starts a background shell that stops itself (SIGSTOP) and returns once
/// the kernel reports it stopped. In a session of its own (setsid): when the
/// command's shell exits, a stopped process in an orphaned process group of
/// the same session gets SIGHUP from the kernel, which would end it before
/// the stop (and no subreaper keeps the group from being orphaned in the
/// cgroup mode).
constexpr const char* self_stopping
  = "setsid sh -c 'kill -STOP $$; echo never' & "
    "until grep -q '^State:.*stopped' /proc/$!/status; do :; done; "
    "echo stopped";

} // namespace

CAF_TEST_FIXTURE_SCOPE(stopped_child_tests, fixture)

CAF_TEST(a stopped descendant ends on the first signal of a stop) {
  auto s = make_session();
  auto r = s.execute(self_stopping);
  SANDBOX_REQUIRE_OK(r);
  CAF_REQUIRE_EQUAL(r->stdout_data, "stopped\n");
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_EQUAL(receipt->ended, 1u);
  // SIGCONT after SIGTERM lets it act on the SIGTERM: no SIGKILL needed.
  CAF_CHECK_EQUAL(receipt->killed, 0u);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
}

CAF_TEST(a stopped descendant does not hold a timeout back for the grace) {
  auto s = make_session();
  auto marker = test::node_fixture::marker(s);
  exec_options opts;
  opts.timeout = 1s;
  // Without SIGCONT this result would come only after the whole grace
  // (an hour, past the suite's time limit).
  auto r = s.execute(std::string{self_stopping} + "; wait", opts);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->reason == exit_reason::timeout);
  CAF_CHECK_EQUAL(r->stdout_data, "stopped\n");
  CAF_CHECK_EQUAL(test::processes_with(marker), 0u);
}

CAF_TEST_FIXTURE_SCOPE_END()
