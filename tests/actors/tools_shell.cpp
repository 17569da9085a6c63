#define CAF_SUITE actors.tools_shell
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <future>
#include <optional>
#include <thread>

#include "fixture.hpp"
#include "sandbox/tools/tools.hpp"

using nlohmann::json;
using sandbox::errc;
using sandbox::actors::tool_call_context;
using sandbox::actors::toolbox;
using sandbox::actors::toolbox_options;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(tools_shell_tests, sandbox::test::node_fixture)

CAF_TEST(the tools come in a fixed order with descriptions and schemas) {
  auto s = make_session();
  toolbox tb{s};
  auto& tools = tb.tools();
  CAF_REQUIRE_EQUAL(tools.size(), 7u);
  CAF_CHECK_EQUAL(tools[0].name, "shell");
  CAF_CHECK_EQUAL(tools[1].name, "code");
  CAF_CHECK_EQUAL(tools[2].name, "file_editor");
  CAF_CHECK_EQUAL(tools[3].name, "process_start");
  CAF_CHECK_EQUAL(tools[4].name, "process_write");
  CAF_CHECK_EQUAL(tools[5].name, "process_kill");
  CAF_CHECK_EQUAL(tools[6].name, "process_list");
  for (auto& t : tools) {
    CAF_CHECK(!t.description.empty());
    CAF_CHECK_EQUAL(t.input_schema["type"], "object");
    CAF_CHECK_EQUAL(t.input_schema["additionalProperties"], false);
  }
  CAF_CHECK_EQUAL(tools[0].input_schema["required"], json({"command"}));
  CAF_CHECK_EQUAL(tools[1].input_schema["required"],
                  json({"code", "language"}));
  CAF_CHECK_EQUAL(tools[2].input_schema["required"], json({"command", "path"}));
}

CAF_TEST(shell answers stdout stderr and the exit code) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("shell", {{"command", "echo out; echo err >&2; exit 3"}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(!r->is_error);
  CAF_CHECK_EQUAL(r->text, "out\n[stderr]\nerr\n[exit code 3]\n");
  CAF_CHECK_EQUAL(r->structured, json({{"exit_code", 3},
                                       {"exit_reason", "exited"},
                                       {"stdout", "out\n"},
                                       {"stderr", "err\n"},
                                       {"truncated", false},
                                       {"dropped_bytes", 0}}));
}

CAF_TEST(shell adds a newline after output without one) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("shell", {{"command", "printf abc"}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->text, "abc\n[exit code 0]\n");
  CAF_CHECK_EQUAL(r->structured["stdout"], "abc");
  auto quiet = tb.call("shell", {{"command", "true"}});
  SANDBOX_REQUIRE_OK(quiet);
  CAF_CHECK_EQUAL(quiet->text, "[exit code 0]\n");
}

CAF_TEST(shell takes cwd and env) {
  auto s = make_session();
  toolbox tb{s};
  auto made = s.execute("mkdir sub");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  auto r = tb.call("shell", {{"command", "pwd; echo $GREETING"},
                             {"cwd", "sub"},
                             {"env", {{"GREETING", "hi there"}}}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->structured["stdout"], dir.path + "/work/sub\nhi there\n");
}

CAF_TEST(shell reports a timeout with exit code 124) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("shell", {{"command", "sleep 30"}, {"timeout", 0.2}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(!r->is_error);
  CAF_CHECK_EQUAL(r->structured["exit_code"], 124);
  CAF_CHECK_EQUAL(r->structured["exit_reason"], "timeout");
  CAF_CHECK_EQUAL(r->text, "[exit code 124: timed out after 0.2 s]\n");
}

CAF_TEST(shell reports a signal by name) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("shell", {{"command", "kill -9 $$"}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->structured["exit_reason"], "signalled");
  CAF_CHECK_EQUAL(r->text, "[exit code 137: killed by signal 9 (SIGKILL)]\n");
}

CAF_TEST(shell keeps head and tail of a long output and states the cut) {
  auto s = make_session();
  toolbox_options opts;
  opts.output_cap = 100;
  toolbox tb{s, opts};
  auto r = tb.call("shell", {{"command", "printf 'head'; head -c 1000 "
                                         "/dev/zero | tr '\\0' x; "
                                         "printf 'tail'"}});
  SANDBOX_REQUIRE_OK(r);
  auto& st = r->structured;
  CAF_CHECK_EQUAL(st["truncated"], true);
  CAF_CHECK_EQUAL(st["dropped_bytes"], 908);
  auto out = st["stdout"].get<std::string>();
  CAF_CHECK_EQUAL(out.substr(0, 4), "head");
  CAF_CHECK_EQUAL(out.substr(out.size() - 4), "tail");
  CAF_CHECK(contains(out, "[sandbox: 908 bytes dropped]"));
  CAF_CHECK(contains(r->text, "[exit code 0]\n[output truncated: 908 bytes "
                              "dropped in the middle; the head and the tail "
                              "are kept]\n"));
}

CAF_TEST(shell replaces invalid UTF - 8 of the output) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("shell", {{"command", "printf 'a\\377b'"}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->structured["stdout"], "a\xEF\xBF\xBD"
                                           "b");
  // Dumping must not throw.
  CAF_CHECK(contains(r->structured.dump(), "a"));
}

CAF_TEST(shell streams chunks to on_output) {
  auto s = make_session();
  toolbox tb{s};
  std::string seen;
  tool_call_context ctx;
  ctx.on_output = [&](const sandbox::output_chunk& c) { seen += c.data; };
  auto r = tb.call("shell", {{"command", "echo one; echo two >&2"}}, ctx);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(contains(seen, "one\n"));
  CAF_CHECK(contains(seen, "two\n"));
}

CAF_TEST(a failing execution is a tool error with its message) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("shell", {{"command", "true"}, {"cwd", "missing-dir"}});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->is_error);
  CAF_CHECK_EQUAL(r->structured["error"], "path_not_found");
  CAF_CHECK_EQUAL(r->structured["message"], r->text);
  CAF_CHECK_EQUAL(r->text, "working directory does not exist: " + dir.path
                             + "/work/missing-dir");
  auto env = tb.call("shell", {{"command", "true"}, {"env", {{"1A", "x"}}}});
  SANDBOX_REQUIRE_OK(env);
  CAF_CHECK(env->is_error);
  CAF_CHECK_EQUAL(env->text, "invalid environment variable name: \"1A\"");
  auto nul = tb.call("shell", {{"command", std::string{"a\0b", 3}}});
  SANDBOX_REQUIRE_OK(nul);
  CAF_CHECK(nul->is_error);
  CAF_CHECK_EQUAL(nul->structured["error"], "invalid_argument");
  CAF_CHECK_EQUAL(nul->text, "invalid command: NUL byte at offset 1");
}

CAF_TEST(two shell calls run at the same time) {
  auto s = make_session();
  toolbox tb{s};
  auto made = s.execute("mkfifo pipe");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  // Each command blocks until the other one opened the FIFO: both end only
  // when they run concurrently (the timeout bounds a failure).
  auto writer = std::async(std::launch::async, [&] {
    return tb.call("shell",
                   {{"command", "echo through > pipe"}, {"timeout", 30}});
  });
  auto reader = tb.call("shell", {{"command", "cat pipe"}, {"timeout", 30}});
  auto written = writer.get();
  SANDBOX_REQUIRE_OK(reader);
  SANDBOX_REQUIRE_OK(written);
  CAF_CHECK_EQUAL(reader->structured["stdout"], "through\n");
  CAF_CHECK_EQUAL(written->structured["exit_code"], 0);
}

CAF_TEST(a running shell call is cancelled through its cancel key) {
  auto s = make_session();
  auto marker = this->marker(s);
  toolbox tb{s};
  std::promise<void> started;
  bool signalled = false;
  tool_call_context ctx;
  ctx.cancel_key = "call-7";
  ctx.on_output = [&](const sandbox::output_chunk& c) {
    if (!signalled && contains(c.data, "started")) {
      signalled = true;
      started.set_value();
    }
  };
  auto call = std::async(std::launch::async, [&] {
    return tb.call("shell",
                   {{"command", "sleep 30 & setsid sleep 31 & echo started; "
                                "wait"}},
                   ctx);
  });
  started.get_future().wait();
  CAF_CHECK(sandbox::test::processes_with(marker) >= 2u);
  // Checked, not required: the call still runs and must be waited for.
  auto cancelled = s.cancel("call-7");
  SANDBOX_CHECK_OK(cancelled);
  CAF_CHECK(cancelled && *cancelled);
  auto r = call.get();
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(!r->is_error);
  CAF_CHECK_EQUAL(r->structured["exit_reason"], "cancelled");
  CAF_CHECK_EQUAL(r->structured["exit_code"], 130);
  CAF_CHECK_EQUAL(r->text, "started\n[exit code 130: cancelled]\n");
  CAF_CHECK_EQUAL(sandbox::test::processes_with(marker), 0u);
}

CAF_TEST(a shell call running when the session stops says so) {
  auto s = make_session();
  auto marker = this->marker(s);
  toolbox tb{s};
  // The stop comes from the chunk callback, once the command printed: it
  // surely runs then. The call's own facade is busy, hence another one.
  sandbox::actors::blocking_session other{node.system(), s.handle()};
  std::optional<sandbox::result<sandbox::stop_receipt>> receipt;
  tool_call_context ctx;
  ctx.on_output = [&](const sandbox::output_chunk& c) {
    if (!receipt && contains(c.data, "started"))
      receipt = other.stop();
  };
  auto r = tb.call("shell", {{"command", "echo started; sleep 30"}}, ctx);
  SANDBOX_REQUIRE_OK(r);
  CAF_REQUIRE(receipt.has_value());
  SANDBOX_REQUIRE_OK(*receipt);
  // An end, not a failure of the tool.
  CAF_CHECK(!r->is_error);
  CAF_CHECK_EQUAL(r->structured["exit_reason"], "stopped");
  auto code = r->structured["exit_code"].get<int>();
  CAF_CHECK(code != 0);
  CAF_CHECK_EQUAL(r->text, "started\n[exit code " + std::to_string(code)
                             + ": the session was stopped]\n");
  CAF_CHECK_EQUAL(r->structured["stdout"], "started\n");
  CAF_CHECK_EQUAL(sandbox::test::processes_with(marker), 0u);
}

CAF_TEST(after the session stopped every tool fails with session_stopped) {
  auto s = make_session();
  toolbox tb{s};
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  auto id = info->id;
  SANDBOX_REQUIRE_OK(s.stop());
  auto sh = tb.call("shell", {{"command", "true"}});
  SANDBOX_REQUIRE_OK(sh);
  CAF_CHECK(sh->is_error);
  CAF_CHECK_EQUAL(sh->structured["error"], "session_stopped");
  auto code = tb.call("code", {{"code", "1"}, {"language", "python3"}});
  SANDBOX_REQUIRE_OK(code);
  CAF_CHECK_EQUAL(code->structured["error"], "session_stopped");
  auto view = tb.call("file_editor", {{"command", "view"}, {"path", dir.path}});
  SANDBOX_REQUIRE_OK(view);
  CAF_CHECK(view->is_error);
  CAF_CHECK_EQUAL(view->structured["error"], "session_stopped");
  auto why = "session " + id + ": the session is stopped";
  CAF_CHECK_EQUAL(sh->text, why);
  CAF_CHECK_EQUAL(view->text, dir.path + ": " + why);
}

CAF_TEST(tool calls leave no descriptor and no process behind) {
  auto s = make_session();
  auto marker = this->marker(s);
  toolbox tb{s};
  auto file = dir.path + "/work/f.txt";
  // The first file_editor call starts the session's filesystem worker;
  // the first command leaves the execution cgroup the session holds open
  // for the next (the timed out one's goes with its stop, the code's is
  // held after it).
  SANDBOX_REQUIRE_OK(tb.call("file_editor", {{"command", "view"},
                                             {"path", dir.path + "/work"}}));
  SANDBOX_REQUIRE_OK(tb.call("shell", {{"command", "true"}}));
  auto before = sandbox::test::plumbing_fds();
  SANDBOX_REQUIRE_OK(
    tb.call("shell", {{"command", "echo x; sleep 30"}, {"timeout", 0.3}}));
  SANDBOX_REQUIRE_OK(
    tb.call("code", {{"code", "print(1)"}, {"language", "python3"}}));
  SANDBOX_REQUIRE_OK(
    tb.call("file_editor",
            {{"command", "create"}, {"path", file}, {"file_text", "a\n"}}));
  SANDBOX_REQUIRE_OK(tb.call("file_editor", {{"command", "str_replace"},
                                             {"path", file},
                                             {"old_str", "a"},
                                             {"new_str", "b"}}));
  SANDBOX_REQUIRE_OK(
    tb.call("file_editor", {{"command", "undo_edit"}, {"path", file}}));
  CAF_CHECK_EQUAL(sandbox::test::leaked_fds(before), "");
  CAF_CHECK_EQUAL(sandbox::test::processes_with(marker), 0u);
}

CAF_TEST(shell names what a contained session refused and the limit hit) {
  auto limits = sandbox::actors::default_contained_limits();
  limits.processes = 64;
  if (!sandbox::host_isolation().missing(limits).empty())
    return;
  sandbox::actors::session_config cfg;
  cfg.isolation = sandbox::isolation_mode::contained;
  cfg.working_directory = dir.path + "/work";
  cfg.home_directory = dir.path + "/home";
  cfg.limits = limits;
  auto s = sandbox::actors::blocking_session::create(node, cfg);
  SANDBOX_REQUIRE_OK(s);
  toolbox tb{*s};
  // /etc is read-only in the view: the create is refused and reported.
  auto r = tb.call("shell", {{"command", "touch /etc/tools-probe; true"}});
  SANDBOX_REQUIRE_OK(r);
  CHECK_THAT(contains(r->text, "[sandbox: write_denied: /etc/tools-probe]\n"),
             r->text);
  CAF_CHECK(!r->structured.contains("ended_by"));
  CAF_REQUIRE(r->structured.contains("violations"));
  CAF_CHECK_EQUAL(
    r->structured["violations"][0],
    json({{"kind", "write_denied"}, {"detail", "/etc/tools-probe"}}));
  // A fork bomb ends at the process limit, which the result names.
  auto bomb = tb.call("shell", {{"command", "while :; do sleep 60 & done"},
                                {"timeout", 120}});
  SANDBOX_REQUIRE_OK(bomb);
  CAF_CHECK_EQUAL(bomb->structured["ended_by"], "process_limit");
  CHECK_THAT(contains(bomb->text, "(ended the command)]\n"), bomb->text);
  SANDBOX_REQUIRE_OK(s->stop());
}

CAF_TEST(an unknown tool is invalid_argument naming it) {
  auto s = make_session();
  toolbox tb{s};
  auto r = tb.call("bash", {{"command", "true"}});
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::invalid_argument);
  CAF_CHECK_EQUAL(r.error().message,
                  "unknown tool: \"bash\" (tools: shell, code, file_editor, "
                  "process_start, process_write, process_kill, process_list)");
}

CAF_TEST_FIXTURE_SCOPE_END()
