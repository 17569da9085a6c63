#define CAF_SUITE mcp.cli
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The `sandbox mcp` binary: what it writes where, how it ends. (The MCP SDK
// client drives the rest in mcp.e2e.)

#include "cli/cli_fixture.hpp"

using namespace sandbox::test;
using nlohmann::json;

namespace {

/// Runs `sandbox mcp args...` with `input` as its stdin.
spawn_result run_mcp(const std::vector<std::string>& args,
                     const std::string& input) {
  temp_dir dir;
  spawn_options o;
  o.stdin_path = dir.at("in");
  spit(o.stdin_path, input);
  o.limit_seconds = 30;
  std::vector<std::string> all{"mcp"};
  all.insert(all.end(), args.begin(), args.end());
  return spawn_cli(all, o);
}

const std::string initialize
  = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":)"
    R"({"protocolVersion":"2025-03-26","capabilities":{},)"
    R"("clientInfo":{"name":"t","version":"1"}}})";

} // namespace

CAF_TEST(stdout carries protocol lines only and logs go to stderr) {
  temp_dir work;
  auto r
    = run_mcp({"--workdir", work.path, "--log-level", "debug"},
              initialize + "\n"
                + R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                + "\nnot json\n"
                + R"({"jsonrpc":"2.0","id":"c","method":"ping"})" + "\n");
  CAF_CHECK_EQUAL(r.status, 0);
  auto lines = json_lines(r.out);
  CAF_REQUIRE_EQUAL(lines.size(), 3u);
  CAF_CHECK_EQUAL(count_lines(r.out), 3u);
  CAF_CHECK_EQUAL(lines[0]["result"]["protocolVersion"], "2025-03-26");
  CAF_CHECK_EQUAL(lines[0]["result"]["serverInfo"]["version"], SANDBOX_VERSION);
  CAF_CHECK_EQUAL(lines[1]["error"]["code"], -32700);
  CAF_CHECK_EQUAL(lines[2]["id"], "c");
  CAF_CHECK_EQUAL(lines[2]["result"], json::object());
  // Debug logs show every message, on stderr.
  CAF_CHECK(r.err.find("mcp <- ") != std::string::npos);
  CAF_CHECK(r.err.find("mcp -> ") != std::string::npos);
}

CAF_TEST(an empty input ends the server at once with status 0) {
  auto r = run_mcp({}, "");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "");
}

CAF_TEST(a working directory that cannot be made is one error line) {
  temp_dir work;
  // A missing one is created, as for `session create`; not under a file.
  spit(work.at("file"), "x");
  for (std::vector<std::string> extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--json"}}) {
    auto args = extra;
    args.push_back("--workdir");
    args.push_back(work.at("file") + "/missing");
    auto r = run_mcp(args, initialize + "\n");
    CAF_CHECK_EQUAL(r.status, 1);
    // Even with --json: stdout is the protocol's.
    CAF_CHECK_EQUAL(r.out, "");
    CAF_CHECK_EQUAL(count_lines(r.err), 1u);
    CAF_CHECK(r.err.find("missing") != std::string::npos);
  }
}

CAF_TEST(mcp is listed by help) {
  auto r = spawn_cli({"help", "mcp"});
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK(r.out.find("--workdir") != std::string::npos);
  CAF_CHECK(r.out.find("Model Context Protocol") != std::string::npos);
}

