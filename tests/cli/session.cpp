#define CAF_SUITE cli.session
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <sys/stat.h>

#include <optional>

#include "cli_fixture.hpp"
#include "helpers/serve_process.hpp"

using sandbox::test::json_lines;
using sandbox::test::sandbox_cli;

CAF_TEST(S18 session create prints id directories and endpoint) {
  sandbox::test::temp_dir dir;
  auto r = sandbox_cli("session create --json --workdir '" + dir.at("wd")
                       + "' --home '" + dir.at("home") + "'");
  CAF_CHECK_EQUAL(r.status, 0);
  auto lines = json_lines(r.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  auto& j = lines[0];
  CAF_CHECK_EQUAL(j["type"], "session");
  CAF_CHECK_EQUAL(j["working_directory"], dir.at("wd"));
  CAF_CHECK_EQUAL(j["home_directory"], dir.at("home"));
  CAF_CHECK_EQUAL(j["id"].get<std::string>().size(), 36u);
  auto port = j["port"].get<int>();
  CAF_CHECK(port > 0);
  CAF_CHECK_EQUAL(j["endpoint"], "http://127.0.0.1:" + std::to_string(port));
  CAF_CHECK_EQUAL(j["children"], 0);
  // On a remote node the session persists until it is stopped.
  if (sandbox::test::remote_mode())
    CAF_CHECK_EQUAL(
      sandbox_cli("session stop " + j["id"].get<std::string>()).status, 0);
}

CAF_TEST(session create on a remote node persists until session stop) {
  // Embedded, the session ends with the CLI: nothing to list afterwards.
  sandbox::test::temp_dir dir;
  auto r = sandbox_cli("--json session create --workdir '" + dir.path + "'");
  CAF_REQUIRE_EQUAL(r.status, 0);
  auto id = json_lines(r.out).at(0)["id"].get<std::string>();
  auto listed = sandbox_cli("--json session list");
  CAF_CHECK_EQUAL(listed.status, 0);
  auto lines = json_lines(listed.out);
  if (!sandbox::test::remote_mode()) {
    CAF_CHECK_EQUAL(lines.size(), 0u);
    return;
  }
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  CAF_CHECK_EQUAL(lines[0]["id"], id);
  CAF_CHECK_EQUAL(lines[0]["node"], sandbox::test::suite_node()->address);
  auto stopped = sandbox_cli("session stop " + id);
  CAF_CHECK_EQUAL(stopped.status, 0);
  CAF_CHECK(stopped.out.find("stopped " + id) == 0);
  CAF_CHECK_EQUAL(sandbox_cli("session stop " + id).status, 1);
}

CAF_TEST(D1 session create defaults to the current directory) {
  sandbox::test::temp_dir dir;
  auto r = sandbox::test::run_shell("cd '" + dir.path + "' && "
                                    + sandbox::test::cli_path()
                                    + " --json session create");
  auto lines = json_lines(r.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  char buf[4096];
  std::string real = ::realpath(dir.path.c_str(), buf);
  if (auto* node = sandbox::test::suite_node()) {
    // The CLI's directory means nothing on a remote machine: the session
    // gets a directory of its own under the node's base directory.
    auto id = lines[0]["id"].get<std::string>();
    CAF_CHECK_EQUAL(lines[0]["working_directory"],
                    node->dir.at("sessions") + "/" + id);
    CAF_CHECK_EQUAL(sandbox_cli("session stop " + id).status, 0);
  } else {
    CAF_CHECK_EQUAL(lines[0]["working_directory"], real);
  }
  auto help = sandbox_cli("session create --help");
  CAF_CHECK(help.out.find("default: the current directory")
            != std::string::npos);
}

CAF_TEST(S18 session create rejects a bad env name) {
  auto r = sandbox_cli("session create --env 9X=1", true);
  CAF_CHECK_EQUAL(r.status, 2);
  CAF_CHECK_EQUAL(r.out, "sandbox: --env: invalid environment variable "
                         "name: \"9X\" (expected [A-Za-z_][A-Za-z0-9_]*)\n");
}

CAF_TEST(S22 session stop of an unknown id exits 1) {
  auto r = sandbox_cli("session stop 00000000-0000-4000-8000-000000000000",
                       true);
  CAF_CHECK_EQUAL(r.status, 1);
  // Without --node the embedded node never knows a session: the message
  // says where sessions persist, as `--session ID run` does.
  CAF_CHECK_EQUAL(r.out, sandbox::test::remote_mode()
                           ? "sandbox: no such session: "
                             "00000000-0000-4000-8000-000000000000\n"
                           : "sandbox: no such session: "
                             "00000000-0000-4000-8000-000000000000 (sessions "
                             "persist only on a remote node)\n");
  r = sandbox_cli("--json session stop nope");
  auto lines = json_lines(r.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  CAF_CHECK_EQUAL(lines[0]["code"], "session_not_found");
}

CAF_TEST(session create without node notes that the session is stopped) {
  sandbox::test::temp_dir dir;
  // stdout carries the session, stderr (into a file) the note.
  auto r = sandbox_cli("--json session create --workdir '" + dir.path + "' 2>'"
                       + dir.at("err") + "'");
  CAF_REQUIRE_EQUAL(r.status, 0);
  auto lines = json_lines(r.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  auto err = sandbox::test::slurp(dir.at("err"));
  auto id = lines[0]["id"].get<std::string>();
  if (sandbox::test::remote_mode()) {
    // On a node the session persists: nothing to note.
    CAF_CHECK_EQUAL(err, "");
    CAF_CHECK_EQUAL(sandbox_cli("session stop " + id).status, 0);
    return;
  }
  CAF_CHECK(err.find("sandbox: note: session ") == 0);
  CAF_CHECK(err.find(" is already stopped: without --node a session ends "
                     "with the command (sessions persist only on a "
                     "remote node)\n")
            != std::string::npos);
  // And so it is: stopping it again finds nothing.
  auto stop = sandbox_cli("session stop " + id, true);
  CAF_CHECK_EQUAL(stop.status, 1);
  CAF_CHECK_EQUAL(stop.out, "sandbox: no such session: " + id
                              + " (sessions persist only on a remote node)\n");
}

CAF_TEST(session list on the embedded node lists nothing) {
  auto r = sandbox_cli("session list");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "");
}

CAF_TEST(session without a subcommand is a usage error) {
  CAF_CHECK_EQUAL(sandbox_cli("session", true).status, 2);
}

CAF_TEST(two CLIs run in one session at the same time) {
  // Each command waits for the other: the first reads a FIFO the second
  // writes, so both run at once whichever starts first. Each CLI's cancel
  // key is its own; a shared one would refuse the second with "already
  // used" (--timeout only bounds a failure, it is no assertion).
  // A node of its own, or the suite's in remote mode (the stand-in CLI
  // names it).
  std::optional<sandbox::test::serve_process> own;
  std::string node_arg;
  if (sandbox::test::suite_node() == nullptr)
    node_arg = "--node " + own.emplace().address;
  sandbox::test::temp_dir dir;
  auto created = sandbox_cli(node_arg + " --json session create --workdir '"
                             + dir.path + "'");
  CAF_REQUIRE_EQUAL(created.status, 0);
  auto id = json_lines(created.out).at(0)["id"].get<std::string>();
  auto wd
    = json_lines(created.out).at(0)["working_directory"].get<std::string>();
  CAF_REQUIRE_EQUAL(::mkfifo((wd + "/gate").c_str(), 0600), 0);
  auto cli = sandbox::test::cli_path() + " " + node_arg + " --session " + id
             + " run --timeout 60 -- ";
  auto r = sandbox::test::run_shell(
    cli + "'cat gate' > '" + dir.at("first") + "' 2>&1 & first=$!; " + cli
    + "'echo second; echo first > gate' 2>&1; echo \"second: $?\"; "
      "wait $first; echo \"first: $?\"; cat '"
    + dir.at("first") + "'");
  CAF_CHECK_EQUAL(r.out, "second\nsecond: 0\nfirst: 0\nfirst\n");
  CAF_CHECK_EQUAL(sandbox_cli(node_arg + " session stop " + id).status, 0);
}
