#define CAF_SUITE cli.run
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <algorithm>

#include "cli_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/temp_dir.hpp"

using sandbox::test::json_lines;
using sandbox::test::sandbox_cli;

CAF_TEST(run exits with the command status) {
  CAF_CHECK_EQUAL(sandbox_cli("run 'exit 7'").status, 7);
  CAF_CHECK_EQUAL(sandbox_cli("run true").status, 0);
  CAF_CHECK_EQUAL(sandbox_cli("run 'kill -9 $$'").status, 137);
}

CAF_TEST(run joins words after-- with single spaces) {
  auto r = sandbox_cli("run -- echo a   b '|' tr a x");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "x b\n");
  r = sandbox_cli("run 'echo one | tr o 0'");
  CAF_CHECK_EQUAL(r.out, "0ne\n");
}

CAF_TEST(run streams stdout and stderr to its own) {
  auto r = sandbox_cli("run 'echo out; echo err >&2' 2>/dev/null");
  CAF_CHECK_EQUAL(r.out, "out\n");
  r = sandbox_cli("run 'echo out; echo err >&2' 2>&1 >/dev/null");
  CAF_CHECK_EQUAL(r.out, "err\n");
}

CAF_TEST(run uses the current directory and the default home) {
  auto r = sandbox_cli("run 'pwd; echo $HOME'");
  char buf[4096];
  std::string cwd = ::getcwd(buf, sizeof(buf));
  const char* tmp = std::getenv("TMPDIR");
  std::string user_dir = std::string{tmp ? tmp : "/tmp"} + "/sandbox-"
                         + std::to_string(::geteuid());
  // A contained session has a home of its own (the remote stand-in names
  // the shared one with --home).
  if (sandbox::test::contained_run() && !sandbox::test::remote_mode()) {
    auto prefix = cwd + "\n" + user_dir + "/homes/";
    CAF_CHECK_EQUAL(r.out.substr(0, prefix.size()), prefix);
    CAF_CHECK_EQUAL(r.out.size(), prefix.size() + 36 + 1);
    return;
  }
  CAF_CHECK_EQUAL(r.out, cwd + "\n" + user_dir + "/home\n");
}

CAF_TEST(run json prints chunks then one result) {
  auto r = sandbox_cli("run --json 'echo hi; printf \"\\377\" >&2; exit 3'");
  CAF_CHECK_EQUAL(r.status, 3);
  auto lines = json_lines(r.out);
  CAF_REQUIRE(lines.size() >= 3u);
  auto& last = lines.back();
  CAF_CHECK_EQUAL(last["type"], "result");
  CAF_CHECK_EQUAL(last["exit_code"], 3);
  CAF_CHECK_EQUAL(last["exit_reason"], "exited");
  CAF_CHECK_EQUAL(last["truncated"], false);
  CAF_CHECK_EQUAL(last["dropped_bytes"], 0);
  bool text = false;
  bool binary = false;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    CAF_CHECK_EQUAL(lines[i]["type"], "chunk");
    if (lines[i]["stream"] == "stdout" && lines[i]["data"] == "hi\n")
      text = true;
    if (lines[i]["stream"] == "stderr" && lines[i]["data_b64"] == "/w==")
      binary = true;
  }
  CAF_CHECK(text);
  CAF_CHECK(binary);
}

CAF_TEST(run json names what a contained session refused) {
  if (sandbox::test::remote_mode()) {
    CAF_MESSAGE("skipped: --isolation needs the embedded node");
    return;
  }
  if (!sandbox::test::host_can_contain())
    return;
  // The session works in `wd` (in /tmp); `out` (in the build tree) it sees
  // but may not change.
  sandbox::test::temp_dir wd;
  sandbox::test::outside_dir out;
  auto target = out.path + "/escaped";
  auto in_wd = [&](const std::string& args) {
    return sandbox::test::run_shell("cd '" + wd.path + "' && "
                                    + sandbox::test::cli_path() + " " + args);
  };
  auto see = "--isolation contained --allow-read '" + out.path + "' ";
  auto r = in_wd(see + "run --json 'echo x > " + target + "'");
  CAF_CHECK_NOT_EQUAL(r.status, 0);
  auto lines = json_lines(r.out);
  CAF_REQUIRE(!lines.empty());
  auto& last = lines.back();
  CAF_CHECK_EQUAL(last["type"], "result");
  CAF_CHECK(last["ended_by"].is_null());
  CAF_REQUIRE_EQUAL(last["violations"].size(), 1u);
  CAF_CHECK_EQUAL(last["violations"][0]["kind"], "write_denied");
  CAF_CHECK_EQUAL(last["violations"][0]["execution"], 1);
  CAF_CHECK_EQUAL(last["violations"][0]["detail"], target);
  // Without --json: one line on stderr after the command's own.
  auto t = in_wd(see + "run 'echo x > " + target + "' 2>&1");
  CAF_CHECK(t.out.find("sandbox: write_denied: " + target)
            != std::string::npos);
  // An honest command has none.
  auto h = in_wd("--isolation contained run --json true");
  CAF_CHECK_EQUAL(h.status, 0);
  auto honest = json_lines(h.out);
  CAF_REQUIRE(!honest.empty());
  CAF_CHECK(honest.back()["violations"].empty());
}

CAF_TEST(run timeout prints the result and exits 124) {
  auto r = sandbox_cli("run --json --timeout 0.3 'echo a; sleep 30'");
  CAF_CHECK_EQUAL(r.status, 124);
  auto lines = json_lines(r.out);
  CAF_REQUIRE(!lines.empty());
  CAF_CHECK_EQUAL(lines.back()["exit_code"], 124);
  CAF_CHECK_EQUAL(lines.back()["exit_reason"], "timeout");
  r = sandbox_cli("run --timeout 0.2 'sleep 30'");
  CAF_CHECK_EQUAL(r.status, 124);
}

CAF_TEST(global options are accepted after the subcommand) {
  auto before = sandbox_cli("--json run true");
  auto after = sandbox_cli("run true --json");
  CAF_CHECK_EQUAL(before.status, 0);
  CAF_CHECK_EQUAL(before.out, after.out);
  auto lines = json_lines(after.out);
  CAF_REQUIRE(!lines.empty());
  CAF_CHECK_EQUAL(lines.back()["type"], "result");
}

CAF_TEST(errors are one line and exit 1) {
  auto r = sandbox_cli("run --cwd no/such/dir true", true);
  CAF_CHECK_EQUAL(r.status, 1);
  CAF_CHECK(r.out.rfind("sandbox: working directory does not exist: ", 0) == 0);
  CAF_CHECK_EQUAL(std::count(r.out.begin(), r.out.end(), '\n'), 1);
  r = sandbox_cli("run --json --cwd no/such/dir true");
  CAF_CHECK_EQUAL(r.status, 1);
  auto lines = json_lines(r.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  CAF_CHECK_EQUAL(lines[0]["type"], "error");
  CAF_CHECK_EQUAL(lines[0]["code"], "path_not_found");
}

CAF_TEST(usage errors exit 2) {
  CAF_CHECK_EQUAL(sandbox_cli("run", true).status, 2);
  CAF_CHECK_EQUAL(sandbox_cli("no-such-command", true).status, 2);
  CAF_CHECK_EQUAL(sandbox_cli("run --timeout abc true", true).status, 2);
  // A bad --env is a usage error too (it was exit 1).
  auto r = sandbox_cli("run --env 1A=b true", true);
  CAF_CHECK_EQUAL(r.status, 2);
  CAF_CHECK_EQUAL(r.out, "sandbox: --env: invalid environment variable "
                         "name: \"1A\" (expected [A-Za-z_][A-Za-z0-9_]*)\n");
}

CAF_TEST(code runs a file or stdin with the interpreter) {
  auto r = sandbox_cli("code --language python3 - <<'EOF'\n"
                       "print('it' + \"'s\")\nEOF");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "it's\n");
  r = sandbox_cli("code -l no-such-lang - </dev/null", true);
  CAF_CHECK_EQUAL(r.status, 127);
  CAF_CHECK_EQUAL(r.out, "Language interpreter not found: no-such-lang\n");
  r = sandbox_cli("code -l 'bad lang' - </dev/null", true);
  CAF_CHECK_EQUAL(r.status, 1);
}
