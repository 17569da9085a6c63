#define CAF_SUITE actors.remote_nodes
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// `sandbox serve` and several nodes: the ready line, the loopback rule, the
// shutdown, and sessions placed on the least loaded of several nodes.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include "fixture.hpp"
#include "helpers/serve_process.hpp"
#include "sandbox/actors/remote.hpp"

using namespace sandbox;
using namespace sandbox::actors;
using test::spawn_capture;

namespace {

/// A loopback port nobody listens on (bound, then closed).
std::string dead_address() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> result;
  std::istringstream in{out};
  std::string line;
  while (std::getline(in, line))
    if (!line.empty())
      result.push_back(nlohmann::json::parse(line));
  return result;
}

/// Runs the CLI with stderr merged into stdout.
test::captured cli(std::vector<std::string> args) {
  std::vector<std::string> argv{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1",
                                SANDBOX_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_capture(argv);
}

} // namespace

CAF_TEST(serve prints one ready line and exits 0 on sigterm) {
  test::temp_dir dir;
  test::serve_process node{{"--json", "--log-level", "info"}, dir.at("log")};
  auto j = nlohmann::json::parse(node.ready);
  CAF_CHECK_EQUAL(j["type"], "listening");
  CAF_CHECK_EQUAL(j["address"], "127.0.0.1");
  CAF_CHECK(j["port"].get<int>() > 0);
  CAF_CHECK_EQUAL(j["tls"], false);
  CAF_CHECK_EQUAL(node.address,
                  "127.0.0.1:" + std::to_string(j["port"].get<int>()));
  auto s = cli({"--node", node.address, "--json", "session", "create"});
  CAF_REQUIRE_EQUAL(s.status, 0);
  auto id = json_lines(s.out).at(0)["id"].get<std::string>();
  auto bg = spawn_capture({SANDBOX_CLI, "--node", node.address, "--session", id,
                           "run", "sleep 300 >/dev/null &"});
  CAF_CHECK_EQUAL(bg.status, 0);
  CAF_CHECK_EQUAL(node.stop(SIGTERM), 0);
  auto log = test::slurp_file(dir.at("log"));
  CAF_CHECK(log.find("[s-" + id + "] stopping (node shutdown)")
            != std::string::npos);
  CAF_CHECK(log.find("[s-" + id + "] stopped: ") != std::string::npos);
  CAF_CHECK(log.find("0 survivors") != std::string::npos);
  // The log never carries what commands printed.
  CAF_CHECK(log.find("sleep 300") == std::string::npos);
}

CAF_TEST(serve refuses a non loopback bind without TLS) {
  auto r = cli({"serve", "--bind", "0.0.0.0", "--port", "0"});
  CAF_CHECK_EQUAL(r.status, 2);
  CAF_CHECK_EQUAL(r.out, "sandbox: serve: --bind 0.0.0.0 is not a loopback "
                         "address: a node reachable from other machines "
                         "requires mutual TLS (--tls-cert, --tls-key and "
                         "--tls-ca)\n");
  auto half = cli({"serve", "--port", "0", "--tls-cert", "/nonexistent"});
  CAF_CHECK_EQUAL(half.status, 2);
  CAF_CHECK_EQUAL(half.out.find('\n'), half.out.size() - 1);
}

CAF_TEST(an unreachable node is one error line naming it) {
  auto dead = dead_address();
  auto r = cli({"--node", dead, "run", "true"});
  CAF_CHECK_EQUAL(r.status, 1);
  CAF_CHECK_EQUAL(r.out.find("sandbox: node " + dead + " is unreachable"), 0u);
  CAF_CHECK_EQUAL(r.out.find('\n'), r.out.size() - 1);
  auto j = cli({"--json", "ls", "--node", dead});
  CAF_CHECK_EQUAL(j.status, 1);
  auto lines = json_lines(j.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  CAF_CHECK_EQUAL(lines[0]["code"], "node_unreachable");
  auto bad = cli({"--node", "nohost", "run", "true"});
  CAF_CHECK_EQUAL(bad.status, 2);
  CAF_CHECK(bad.out.find("\"nohost\"") != std::string::npos);
}

CAF_TEST(new sessions go to the node with the fewest running children) {
  test::serve_process a;
  test::serve_process b;
  // Load node a with one running child.
  auto ra = remote_node::connect(a.address);
  SANDBOX_REQUIRE_OK(ra);
  session_config detached;
  detached.detached = true;
  auto busy = blocking_session::create(**ra, detached);
  SANDBOX_REQUIRE_OK(busy);
  auto p = busy->spawn("sleep 300");
  SANDBOX_REQUIRE_OK(p);
  auto dead = dead_address();
  // A node that does not answer is skipped.
  std::vector<std::string> nodes{"--node",  dead,     "--node",
                                 a.address, "--node", b.address};
  auto args = nodes;
  args.insert(args.end(), {"--json", "session", "create"});
  auto first = cli(args);
  CAF_REQUIRE_EQUAL(first.status, 0);
  auto made = json_lines(first.out).at(0);
  CAF_CHECK_EQUAL(made["node"], b.address);
  // Every command works across the nodes: run finds the session's node.
  args = nodes;
  args.insert(args.end(),
              {"--session", made["id"].get<std::string>(), "run", "pwd"});
  auto pwd = cli(args);
  CAF_CHECK_EQUAL(pwd.status, 0);
  CAF_CHECK_EQUAL(pwd.out, made["working_directory"].get<std::string>() + "\n");
  // The list across nodes says which node holds each session.
  args = nodes;
  args.insert(args.end(), {"--json", "session", "list"});
  auto listed = cli(args);
  CAF_CHECK_EQUAL(listed.status, 0);
  auto lines = json_lines(listed.out);
  CAF_REQUIRE_EQUAL(lines.size(), 2u);
  for (auto& l : lines) {
    if (l["id"] == made["id"])
      CAF_CHECK_EQUAL(l["node"], b.address);
    else
      CAF_CHECK_EQUAL(l["node"], a.address);
  }
  // The library does the same.
  auto pool = node_pool::connect({a.address, b.address});
  SANDBOX_REQUIRE_OK(pool);
  auto placed = pool->create();
  SANDBOX_REQUIRE_OK(placed);
  CAF_CHECK_EQUAL(placed->second->address(), b.address);
  SANDBOX_REQUIRE_OK(placed->first.stop());
  // Stop works on whichever node holds the session.
  args = nodes;
  args.insert(args.end(), {"session", "stop", made["id"].get<std::string>()});
  CAF_CHECK_EQUAL(cli(args).status, 0);
  SANDBOX_REQUIRE_OK(busy->stop());
}
