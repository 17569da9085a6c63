#define CAF_SUITE cli.logging
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// --log-level (docs/cli.md, "Logging"): log lines go to stderr only, each
// line about a session carries its id and the execution's number, never a
// command's output; `off` silences them. The real CLI with its embedded
// node (the remote mode's logs are the node's: see cli.session's serve).

#include <sstream>
#include <string>
#include <vector>

#include "cli_fixture.hpp"

using sandbox::test::run_shell;
using sandbox::test::slurp;
using sandbox::test::temp_dir;

namespace {

struct logged {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs the CLI (embedded node) in `dir` with `args`, stderr to a file.
logged run_cli(const temp_dir& dir, const std::string& args) {
  auto err = dir.at("stderr");
  auto r = run_shell("cd '" + dir.path + "' && " SANDBOX_CLI " " + args + " 2>'"
                     + err + "'");
  return {r.status, r.out, slurp(err)};
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

/// A log line: spdlog's "[date time] [sandbox] [level] ...".
bool is_log_line(const std::string& line) {
  return line.rfind("[20", 0) == 0 && has(line, "] [sandbox] [");
}

} // namespace

CAF_TEST(debug logs go to stderr tagged with session and execution) {
  temp_dir dir;
  auto r = run_cli(dir, "--log-level debug run -- 'echo secret-stdout; "
                        "echo secret-stderr >&2'");
  CAF_MESSAGE("stderr:\n" << r.err);
  CAF_CHECK_EQUAL(r.status, 0);
  // stdout is the command's output alone.
  CAF_CHECK_EQUAL(r.out, "secret-stdout\n");
  // The command's stderr, and log lines.
  CAF_CHECK(has(r.err, "secret-stderr\n"));
  std::string session_tag;
  bool created = false, launched = false, ended = false, stopped = false;
  for (auto& line : lines_of(r.err)) {
    if (!is_log_line(line))
      continue;
    // Never a command's output.
    CAF_CHECK(!has(line, "secret-"));
    if (has(line, "created in " + dir.path)) {
      created = true;
      auto at = line.find("[s-");
      CAF_REQUIRE(at != std::string::npos);
      session_tag = line.substr(at, line.find(']', at) - at);
    }
    if (has(line, "launched pid ")) {
      launched = true;
      CAF_CHECK(!session_tag.empty() && has(line, session_tag + " e-"));
      CAF_CHECK(has(line, "[debug]"));
    }
    if (has(line, "] ended: exited 0")) {
      ended = true;
      CAF_CHECK(!session_tag.empty() && has(line, session_tag + " e-"));
    }
    if (has(line, "] stopped: ")) {
      stopped = true;
      CAF_CHECK(!session_tag.empty() && has(line, session_tag + "]"));
      CAF_CHECK(has(line, "[info]"));
      CAF_CHECK(has(line, "survivors"));
    }
  }
  CAF_CHECK(has(r.err, "[info] node start: containment "));
  CAF_CHECK(created);
  CAF_CHECK(launched);
  CAF_CHECK(ended);
  CAF_CHECK(stopped);
}

CAF_TEST(a timeout logs the kill stage at debug) {
  temp_dir dir;
  // The shell ignores SIGTERM: the kill stage ends it.
  auto r = run_cli(dir, "--log-level debug run --timeout 0.2 -- "
                        "'trap \"\" TERM; sleep 30'");
  CAF_MESSAGE("stderr:\n" << r.err);
  CAF_CHECK_EQUAL(r.status, 124);
  CAF_CHECK(has(r.err, "timeout: stopping pid "));
  CAF_CHECK(has(r.err, "stop: signal 15 to "));
  CAF_CHECK(has(r.err, "stop: kill stage, SIGKILL to "));
  // The execution's stop is tagged with the execution; the session's own
  // sweep at the end with the session.
  for (auto& line : lines_of(r.err)) {
    if (!is_log_line(line) || !has(line, "stop:"))
      continue;
    CAF_CHECK(has(line, "[s-"));
    if (has(line, "signal 15") || has(line, "kill stage"))
      CAF_CHECK(has(line, " e-"));
  }
}

CAF_TEST(info shows the session but not each launch) {
  temp_dir dir;
  auto r = run_cli(dir, "--log-level info run -- true");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "");
  CAF_CHECK(has(r.err, "created in "));
  CAF_CHECK(has(r.err, "] stopped: "));
  CAF_CHECK(!has(r.err, "launched pid"));
}

CAF_TEST(off and the default warn log nothing for a plain run) {
  temp_dir dir;
  for (auto args : {"--log-level off run -- 'echo out; echo err >&2'",
                    "run --log-level off -- 'echo out; echo err >&2'"}) {
    auto r = run_cli(dir, args);
    CAF_CHECK_EQUAL(r.status, 0);
    CAF_CHECK_EQUAL(r.out, "out\n");
    CAF_CHECK_EQUAL(r.err, "err\n");
  }
  auto r = run_cli(dir, "run -- 'echo out; echo err >&2'");
  CAF_CHECK_EQUAL(r.out, "out\n");
  for (auto& line : lines_of(r.err))
    CAF_CHECK(!is_log_line(line) || has(line, "[warning]"));
}

CAF_TEST(an unknown level is a usage error that runs nothing) {
  temp_dir dir;
  auto r = run_cli(dir, "--log-level loud run -- 'touch ran'");
  CAF_CHECK_EQUAL(r.status, 2);
  CAF_CHECK(has(r.err, "--log-level expects one of trace, debug, info, warn, "
                       "error, off; got loud"));
  CAF_CHECK(::access(dir.at("ran").c_str(), F_OK) != 0);
}
