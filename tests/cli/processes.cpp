#define CAF_SUITE cli.processes
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <optional>

#include "cli_fixture.hpp"
#include "helpers/serve_process.hpp"

using sandbox::test::json_lines;
using sandbox::test::sandbox_cli;

namespace {

/// A node (its own, or the suite's in remote mode, which the stand-in CLI
/// names) and a detached session on it; `cli(args)` runs the CLI in that
/// session.
struct process_fixture {
  std::optional<sandbox::test::serve_process> own;
  std::string node_arg;
  std::string id;

  process_fixture() {
    if (sandbox::test::suite_node() == nullptr)
      node_arg = "--node " + own.emplace().address + " ";
    auto created = sandbox_cli(node_arg + "--json session create");
    if (created.status != 0)
      throw std::runtime_error("session create failed: " + created.out);
    id = json_lines(created.out).at(0)["id"].get<std::string>();
  }

  ~process_fixture() {
    (void) sandbox_cli(node_arg + "session stop " + id);
  }

  sandbox::test::cli_result cli(const std::string& args,
                                bool merge_stderr = false) {
    return sandbox_cli(node_arg + "--session " + id + " " + args, merge_stderr);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(cli_process_tests, process_fixture)

CAF_TEST(run detach prints the id and attach follows to the exit status) {
  auto started = cli("run --detach -- 'echo one; echo two >&2; exit 3'");
  CAF_REQUIRE_EQUAL(started.status, 0);
  CAF_CHECK_EQUAL(started.out, "p-1\n");
  // stdout and stderr go to the CLI's own; the exit status is the
  // process's.
  auto attached = cli("attach p-1 2>/dev/null");
  CAF_CHECK_EQUAL(attached.status, 3);
  CAF_CHECK_EQUAL(attached.out, "one\n");
  auto err = cli("attach p-1 2>&1 >/dev/null");
  CAF_CHECK_EQUAL(err.out, "two\n");
  auto ps = cli("--json ps");
  CAF_REQUIRE_EQUAL(ps.status, 0);
  auto lines = json_lines(ps.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  CAF_CHECK_EQUAL(lines[0]["id"], "p-1");
  CAF_CHECK_EQUAL(lines[0]["state"], "exited");
  CAF_CHECK_EQUAL(lines[0]["exit_code"], 3);
  CAF_CHECK_EQUAL(lines[0]["next_offset"], 8);
}

CAF_TEST(send feeds stdin and attach from an offset resumes exactly) {
  auto started = cli("--json run --detach --stdin -- cat");
  CAF_REQUIRE_EQUAL(started.status, 0);
  auto p = json_lines(started.out).at(0);
  CAF_CHECK_EQUAL(p["id"], "p-1");
  CAF_CHECK_EQUAL(p["stdin_open"], true);
  auto sent = sandbox::test::run_shell(
    "printf 'alpha\\nbeta\\n' | " + sandbox::test::cli_path() + " " + node_arg
    + "--session " + id + " send p-1 --eof");
  CAF_REQUIRE_EQUAL(sent.status, 0);
  auto all = cli("--json attach p-1");
  CAF_REQUIRE_EQUAL(all.status, 0);
  auto lines = json_lines(all.out);
  CAF_REQUIRE(!lines.empty());
  std::string got;
  for (auto& l : lines)
    if (l["type"] == "chunk") {
      CAF_CHECK_EQUAL(l["offset"].get<size_t>(), got.size());
      got += l["data"].get<std::string>();
    }
  CAF_CHECK_EQUAL(got, "alpha\nbeta\n");
  CAF_CHECK_EQUAL(lines.back()["type"], "result");
  CAF_CHECK_EQUAL(lines.back()["next_offset"], 11);
  auto tail = cli("attach p-1 --from 6");
  CAF_CHECK_EQUAL(tail.out, "beta\n");
  auto none = cli("attach p-1 --from 11");
  CAF_CHECK_EQUAL(none.out, "");
  CAF_CHECK_EQUAL(none.status, 0);
}

CAF_TEST(kill signals a running process and attach reports its end) {
  CAF_REQUIRE_EQUAL(cli("run --detach -- sleep 100").status, 0);
  auto running = cli("attach p-1 --no-follow --json");
  CAF_CHECK_EQUAL(running.status, 0);
  CAF_CHECK_EQUAL(json_lines(running.out).back()["type"], "detached");
  CAF_REQUIRE_EQUAL(cli("kill p-1 --signal KILL").status, 0);
  auto ended = cli("attach p-1");
  CAF_CHECK_EQUAL(ended.status, 137);
  auto again = cli("kill p-1", true);
  CAF_CHECK_EQUAL(again.status, 1);
  CAF_CHECK(again.out.find("p-1 has exited") != std::string::npos);
}

CAF_TEST(process subcommands name what is wrong) {
  auto unknown = cli("kill p-9", true);
  CAF_CHECK_EQUAL(unknown.status, 1);
  CAF_CHECK(unknown.out.find("no process p-9") != std::string::npos);
  auto bad_signal = cli("run --detach -- true && true", true);
  CAF_CHECK_EQUAL(bad_signal.status, 0);
  auto sig = cli("kill p-1 --signal NOPE", true);
  CAF_CHECK_EQUAL(sig.status, 2);
  CAF_CHECK(sig.out.find("unknown signal \"NOPE\"") != std::string::npos);
  auto stdin_alone = cli("run --stdin -- cat", true);
  CAF_CHECK_EQUAL(stdin_alone.status, 2);
  CAF_CHECK(stdin_alone.out.find("--stdin needs --detach")
            != std::string::npos);
  auto both = cli("attach p-1 --from 0 --from-start", true);
  CAF_CHECK_EQUAL(both.status, 2);
  // Without --session there is no session that outlives the CLI (the
  // remote mode's stand-in CLI gives every command a session of its own).
  if (sandbox::test::remote_mode())
    return;
  auto no_session = sandbox_cli(node_arg + "ps", true);
  CAF_CHECK_EQUAL(no_session.status, 2);
  CAF_CHECK(no_session.out.find("ps: needs --session") != std::string::npos);
}

CAF_TEST(run detach tty then resize reaches the process terminal) {
  auto started = cli("--json run --detach --tty --rows 10 --cols 20 -- "
                     "'trap \"stty size; exit 0\" WINCH; stty size; "
                     "while :; do sleep 1 & wait $!; done'");
  CAF_REQUIRE_EQUAL(started.status, 0);
  auto p = json_lines(started.out).at(0);
  CAF_CHECK_EQUAL(p["id"], "p-1");
  CAF_CHECK_EQUAL(p["tty"], true);
  // The trap is set once the first size is out: only then resize.
  std::string seen;
  for (int i = 0; i < 100 && seen.find("10 20") == std::string::npos; ++i)
    seen = cli("attach p-1 --from-start --no-follow").out;
  REQUIRE_THAT(seen.find("10 20\r\n") != std::string::npos, seen);
  auto resized = cli("resize p-1 --rows 11 --cols 21", true);
  CAF_REQUIRE_EQUAL(resized.status, 0);
  auto attached = cli("attach p-1 --from-start");
  CAF_CHECK_EQUAL(attached.status, 0);
  CAF_CHECK_EQUAL(attached.out, "10 20\r\n11 21\r\n");
  auto ps = cli("--json ps");
  CAF_CHECK_EQUAL(json_lines(ps.out).at(0)["tty"], true);
  auto plain = cli("run --detach -- sleep 30");
  CAF_REQUIRE_EQUAL(plain.status, 0);
  auto refused = cli("resize p-2 --rows 5 --cols 5", true);
  CAF_CHECK_EQUAL(refused.status, 1);
  CHECK_THAT(refused.out.find("p-2 has no terminal") != std::string::npos,
             refused.out);
  CAF_CHECK_EQUAL(cli("kill p-2 --signal KILL").status, 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
