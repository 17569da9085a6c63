#define CAF_SUITE actors.tools_process
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include "fixture.hpp"
#include "sandbox/tools/tools.hpp"

using nlohmann::json;
using sandbox::actors::toolbox;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(tools_process_tests, sandbox::test::node_fixture)

CAF_TEST(process_start answers with the output so far and the process id) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("process_start", {{"command", "echo started; exec sleep 30"},
                                     {"yield_seconds", 20}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(!r->is_error);
  // It answers once the banner came and paused, not after 20 s or at the
  // end of the sleep: the process still runs.
  CAF_CHECK_EQUAL(r->structured["process_id"], "p-1");
  CAF_CHECK_EQUAL(r->structured["running"], true);
  CAF_CHECK_EQUAL(r->structured["output"], "started\n");
  CAF_CHECK_EQUAL(r->structured["next_offset"], 8);
  CAF_CHECK(contains(r->text, "started\n"));
  CAF_CHECK(contains(r->text, "p-1 is running"));
  auto k = tb.call("process_kill", {{"process_id", "p-1"}, {"signal", "KILL"}});
  SANDBOX_REQUIRE_OK(k);
  CAF_CHECK_EQUAL(k->structured["running"], false);
  CAF_CHECK_EQUAL(k->structured["exit_code"], 137);
  CAF_CHECK(contains(k->text, "SIGKILL"));
}

CAF_TEST(process_write drives a REPL turn by turn) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("process_start", {{"command", "python3 -u -i -q 2>&1"},
                                     {"yield_seconds", 5}});
  SANDBOX_REQUIRE_OK(r);
  auto id = r->structured["process_id"].get<std::string>();
  auto turn = [&](const std::string& line) {
    auto w
      = tb.call("process_write",
                {{"process_id", id}, {"text", line}, {"yield_seconds", 20}});
    if (!w || w->is_error)
      CAF_FAIL("process_write failed");
    return w->structured["output"].get<std::string>();
  };
  CAF_CHECK(contains(turn("x = 6 * 7\nprint(x)\n"), "42"));
  // The next call starts where this one left off: only the new output.
  auto second = turn("print(x + 1)\n");
  CAF_CHECK(contains(second, "43"));
  CAF_CHECK(!contains(second, "42"));
  auto end = tb.call("process_write", {{"process_id", id},
                                       {"close_stdin", true},
                                       {"yield_seconds", 20}});
  SANDBOX_REQUIRE_OK(end);
  CAF_CHECK_EQUAL(end->structured["running"], false);
  CAF_CHECK_EQUAL(end->structured["exit_code"], 0);
  // from_offset reads again from the start.
  auto all
    = tb.call("process_write",
              {{"process_id", id}, {"from_offset", 0}, {"yield_seconds", 0}});
  SANDBOX_REQUIRE_OK(all);
  auto text = all->structured["output"].get<std::string>();
  CAF_CHECK(contains(text, "42"));
  CAF_CHECK(contains(text, "43"));
}

CAF_TEST(process_list shows every process and errors name the process) {
  auto s = make_session();
  toolbox tb{s};
  SANDBOX_REQUIRE_OK(tb.call("process_start", {{"command", "exit 3"}}));
  auto l = tb.call("process_list", json::object());
  SANDBOX_REQUIRE_OK(l);
  auto& list = l->structured["processes"];
  CAF_REQUIRE_EQUAL(list.size(), 1u);
  CAF_CHECK_EQUAL(list[0]["id"], "p-1");
  CAF_CHECK_EQUAL(list[0]["state"], "exited");
  CAF_CHECK_EQUAL(list[0]["exit_code"], 3);
  CAF_CHECK(contains(l->text, "p-1 exited 3 exit 3"));
  auto w = tb.call("process_write", {{"process_id", "p-1"}, {"text", "x"}});
  SANDBOX_REQUIRE_OK(w);
  CAF_CHECK(w->is_error);
  CAF_CHECK(contains(w->text, "p-1 has exited"));
  auto none = tb.call("process_kill", {{"process_id", "p-9"}});
  SANDBOX_REQUIRE_OK(none);
  CAF_CHECK(none->is_error);
  CAF_CHECK(contains(none->text, "no process p-9"));
  auto bad = tb.call("process_kill",
                     {{"process_id", "p-1"}, {"signal", "STOP"}});
  CAF_REQUIRE(!bad);
  CAF_CHECK(bad.error().code == sandbox::errc::invalid_argument);
}

CAF_TEST(output beyond one call continues at the next offset without loss) {
  auto s = make_session();
  sandbox::actors::toolbox_options opts;
  opts.output_cap = 1000;
  toolbox tb{s, opts};
  std::string expected;
  for (int i = 1; i <= 2000; ++i)
    expected += std::to_string(i) + "\n";
  auto r = tb.call("process_start",
                   {{"command", "seq 1 2000"}, {"yield_seconds", 20}});
  SANDBOX_REQUIRE_OK(r);
  auto got = r->structured["output"].get<std::string>();
  CAF_CHECK(got.size() <= 1000u);
  // Calls that stopped at the cap after the end say where it continues.
  SANDBOX_REQUIRE_OK(s.wait_process("p-1", std::chrono::seconds{10}));
  int ended_and_capped = 0;
  for (int calls = 0; calls < 100 && got.size() < expected.size(); ++calls) {
    auto w = tb.call("process_write",
                     {{"process_id", "p-1"}, {"yield_seconds", 20}});
    SANDBOX_REQUIRE_OK(w);
    CAF_REQUIRE_EQUAL(w->structured["gap"], 0);
    auto part = w->structured["output"].get<std::string>();
    got += part;
    if (!w->structured["running"].get<bool>() && part.size() == 1000u) {
      ++ended_and_capped;
      CAF_CHECK(contains(w->text, "ended: exit code 0; its output continues "
                                  "at offset "
                                    + std::to_string(got.size())));
    }
  }
  CAF_CHECK_EQUAL(got, expected);
  CAF_CHECK_GREATER(ended_and_capped, 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
