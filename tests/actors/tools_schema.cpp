#define CAF_SUITE actors.tools_schema
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <optional>

#include "fixture.hpp"
#include "sandbox/tools/tools.hpp"

using nlohmann::json;
using sandbox::errc;
using sandbox::actors::toolbox;

namespace {

struct schema_fixture : sandbox::test::node_fixture {
  sandbox::actors::blocking_session s;
  toolbox tb;

  schema_fixture() : s(make_session()), tb(s) {
  }

  /// The message of the invalid_argument that `args` must produce.
  std::string refused(const std::string& tool, const json& args) {
    auto r = tb.call(tool, args);
    if (r) {
      CAF_FAIL("accepted: " << args.dump() << " -> " << r->text);
    }
    CAF_CHECK(r.error().code == errc::invalid_argument);
    return r.error().message;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(tools_schema_tests, schema_fixture)

CAF_TEST(missing required members are named) {
  CAF_CHECK_EQUAL(refused("shell", json::object()),
                  "shell: missing required member \"command\"");
  // Null arguments count as an empty object.
  CAF_CHECK_EQUAL(refused("shell", json{}),
                  "shell: missing required member \"command\"");
  CAF_CHECK_EQUAL(refused("code", {{"code", "x"}}),
                  "code: missing required member \"language\"");
  CAF_CHECK_EQUAL(refused("file_editor", {{"command", "view"}}),
                  "file_editor: missing required member \"path\"");
}

CAF_TEST(unknown members are named with the known ones) {
  CAF_CHECK_EQUAL(refused("shell", {{"command", "true"}, {"cmd", "x"}}),
                  "shell: unknown member \"cmd\" (members: command, cwd, "
                  "env, timeout)");
  CAF_CHECK_EQUAL(refused("code",
                          {{"code", "x"}, {"language", "sh"}, {"cwd", "/"}}),
                  "code: unknown member \"cwd\" (members: code, language, "
                  "timeout)");
  CAF_CHECK_EQUAL(refused("file_editor",
                          {{"command", "view"}, {"path", "/"}, {"x", 1}}),
                  "file_editor: unknown member \"x\" (members: command, "
                  "file_text, insert_line, new_str, old_str, path, "
                  "view_range)");
}

CAF_TEST(wrong types are named with the value given) {
  CAF_CHECK_EQUAL(refused("shell", {{"command", 1}}),
                  "shell: \"command\" must be a string, got 1");
  CAF_CHECK_EQUAL(refused("shell", {{"command", "x"}, {"timeout", "5"}}),
                  "shell: \"timeout\" must be a number, got \"5\"");
  CAF_CHECK_EQUAL(refused("shell", {{"command", "x"}, {"cwd", json{}}}),
                  "shell: \"cwd\" must be a string, got null");
  CAF_CHECK_EQUAL(refused("shell", {{"command", "x"}, {"env", {1, 2}}}),
                  "shell: \"env\" must be an object, got [1,2]");
  CAF_CHECK_EQUAL(refused("shell", {{"command", "x"}, {"env", {{"A", true}}}}),
                  "shell: \"env.A\" must be a string, got true");
  CAF_CHECK_EQUAL(refused("code", {{"code", {{"a", 1}}}, {"language", "sh"}}),
                  "code: \"code\" must be a string, got {\"a\":1}");
  CAF_CHECK_EQUAL(
    refused("file_editor",
            {{"command", "view"}, {"path", "/"}, {"view_range", "1-2"}}),
    "file_editor: \"view_range\" must be an array, got "
    "\"1-2\"");
  CAF_CHECK_EQUAL(
    refused("file_editor",
            {{"command", "view"}, {"path", "/"}, {"view_range", {1, 2.5}}}),
    "file_editor: \"view_range[1]\" must be an integer, got "
    "2.5");
  CAF_CHECK_EQUAL(refused("file_editor", {{"command", "insert"},
                                          {"path", "/f"},
                                          {"insert_line", "3"},
                                          {"new_str", "x"}}),
                  "file_editor: \"insert_line\" must be an integer, got "
                  "\"3\"");
  CAF_CHECK_EQUAL(
    refused("file_editor",
            {{"command", "create"}, {"path", "/f"}, {"file_text", false}}),
    "file_editor: \"file_text\" must be a string, got false");
}

CAF_TEST(arguments must be an object) {
  CAF_CHECK_EQUAL(refused("shell", json::array({"true"})),
                  "shell: arguments must be an object, got [\"true\"]");
  CAF_CHECK_EQUAL(refused("code", "print(1)"),
                  "code: arguments must be an object, got \"print(1)\"");
}

CAF_TEST(ranges enums and item counts are named) {
  CAF_CHECK_EQUAL(refused("shell", {{"command", "x"}, {"timeout", -1}}),
                  "shell: \"timeout\" must be from 0 to 1000000000, got -1");
  CAF_CHECK_EQUAL(
    refused("code", {{"code", "x"}, {"language", "sh"}, {"timeout", 1e12}}),
    "code: \"timeout\" must be from 0 to 1000000000, got "
    "1000000000000.0");
  CAF_CHECK_EQUAL(refused("file_editor", {{"command", "insert"},
                                          {"path", "/f"},
                                          {"insert_line", -1},
                                          {"new_str", "x"}}),
                  "file_editor: \"insert_line\" must be >= 0, got -1");
  CAF_CHECK_EQUAL(refused("file_editor", {{"command", "edit"}, {"path", "/"}}),
                  "file_editor: \"command\" must be one of \"view\", "
                  "\"create\", \"str_replace\", \"insert\", \"undo_edit\"; "
                  "got \"edit\"");
  CAF_CHECK_EQUAL(
    refused("file_editor",
            {{"command", "view"}, {"path", "/"}, {"view_range", {1}}}),
    "file_editor: \"view_range\" must have 2 items, got [1]");
  CAF_CHECK_EQUAL(
    refused("file_editor",
            {{"command", "view"}, {"path", "/"}, {"view_range", {1, 2, 3}}}),
    "file_editor: \"view_range\" must have 2 items, got "
    "[1,2,3]");
}

CAF_TEST(a refused call runs nothing) {
  auto marker = dir.path + "/work/ran";
  refused("shell", {{"command", "touch " + marker}, {"timeout", "1"}});
  auto r = s.execute("test -e " + marker);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 1);
}

CAF_TEST(valid arguments pass with every optional member) {
  auto r = tb.call("shell", {{"command", "echo $X"},
                             {"timeout", 10},
                             {"cwd", "."},
                             {"env", {{"X", "y"}}}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->structured["stdout"], "y\n");
}

CAF_TEST_FIXTURE_SCOPE_END()
