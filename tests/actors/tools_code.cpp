#define CAF_SUITE actors.tools_code
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include "fixture.hpp"
#include "sandbox/tools/tools.hpp"

using nlohmann::json;
using sandbox::actors::toolbox;

CAF_TEST_FIXTURE_SCOPE(tools_code_tests, sandbox::test::node_fixture)

CAF_TEST(code runs python3 source and answers as shell does) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("code", {{"language", "python3"},
                            {"code", "import sys\nprint(6 * 7)\n"
                                     "print('oops', file=sys.stderr)\n"
                                     "sys.exit(2)\n"}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(!r->is_error);
  CAF_CHECK_EQUAL(r->text, "42\n[stderr]\noops\n[exit code 2]\n");
  CAF_CHECK_EQUAL(r->structured, json({{"exit_code", 2},
                                       {"exit_reason", "exited"},
                                       {"stdout", "42\n"},
                                       {"stderr", "oops\n"},
                                       {"truncated", false},
                                       {"dropped_bytes", 0}}));
}

CAF_TEST(code runs in the session working directory) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("code", {{"language", "sh"}, {"code", "pwd"}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->structured["stdout"], dir.path + "/work\n");
}

CAF_TEST(code refuses an invalid language name as the CLI does) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("code", {{"language", "py thon"}, {"code", "print(1)"}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->is_error);
  CAF_CHECK_EQUAL(r->text, "invalid language: \"py thon\"");
  CAF_CHECK_EQUAL(r->structured,
                  json({{"error", "invalid_argument"}, {"message", r->text}}));
}

CAF_TEST(code with a missing interpreter exits 127 and says so) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("code",
                   {{"language", "no-such-interpreter"}, {"code", "x"}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(!r->is_error);
  CAF_CHECK_EQUAL(r->structured["exit_code"], 127);
  CAF_CHECK_EQUAL(r->text, "[stderr]\nLanguage interpreter not found: "
                           "no-such-interpreter\n[exit code 127]\n");
}

CAF_TEST(code honours its timeout) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call(
    "code", {{"language", "sh"}, {"code", "sleep 30"}, {"timeout", 0.2}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->structured["exit_reason"], "timeout");
  CAF_CHECK_EQUAL(r->text, "[exit code 124: timed out after 0.2 s]\n");
}

CAF_TEST_FIXTURE_SCOPE_END()
