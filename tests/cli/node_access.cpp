#define CAF_SUITE cli.node_access
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Who gets into a `sandbox serve` node and what they see there, end to end
// (findings A8 and A12 of the reliability review): on loopback without TLS
// the node's own user comes in whatever its environment; on a TLS node a
// client sees, uses and stops only the sessions it created, and an
// `--admin` identity all.

#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "helpers/serve_process.hpp"
#include "helpers/tls_files.hpp"

using sandbox::test::serve_process;
using sandbox::test::spawn_cli;
using sandbox::test::spawn_result;
using sandbox::test::temp_dir;
using sandbox::test::tls_files;

namespace {

using args = std::vector<std::string>;

args operator+(args x, const args& y) {
  x.insert(x.end(), y.begin(), y.end());
  return x;
}

args tls_flags(const std::string& cert, const std::string& key,
               const std::string& ca) {
  return {"--tls-cert", cert, "--tls-key", key, "--tls-ca", ca};
}

bool contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos)
    return true;
  CAF_MESSAGE("'" << text << "' does not contain '" << part << "'");
  return false;
}

spawn_result run(const args& a, std::vector<std::string> env = {}) {
  sandbox::test::spawn_options o;
  o.limit_seconds = 60;
  o.env = std::move(env);
  return spawn_cli(a, o);
}

} // namespace

CAF_TEST(the node user reaches a loopback node whatever its TMPDIR and HOME) {
  serve_process node;
  temp_dir elsewhere;
  auto r = run(args{"--node", node.address, "run", "--", "echo", "in"},
               {"TMPDIR=" + elsewhere.at("tmp-that-does-not-exist"),
                "HOME=" + elsewhere.at("home-that-does-not-exist")});
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "in\n");
}

CAF_TEST(serve refuses an allow uid that is not a number) {
  auto r = run(args{"serve", "--port", "0", "--allow-uid", "nobody"});
  CAF_CHECK(r.exited);
  CAF_CHECK_NOT_EQUAL(r.status, 0);
  CAF_CHECK(contains(r.err, "--allow-uid"));
  CAF_CHECK(r.out.find("listening") == std::string::npos);
}

CAF_TEST(serve refuses a session id range it cannot use and names it) {
  for (auto* bad : {"5", "x:1", "0:1", "4294967290:100"}) {
    auto r = run(args{"serve", "--port", "0", "--session-ids", bad});
    CAF_CHECK(r.exited);
    CAF_CHECK_EQUAL(r.status, 2);
    CAF_CHECK(contains(r.err, "--session-ids"));
    CAF_CHECK(r.out.find("listening") == std::string::npos);
  }
}

CAF_TEST(a TLS client gets session_not_found for the session of another) {
  tls_files files;
  auto second = files.add_client("second", "second client");
  auto op = files.add_client("operator", "operator");
  serve_process node{tls_flags(files.node_cert, files.node_key, files.ca)
                     + args{"--admin", "CN=operator"}};
  auto at = args{"--node", node.address};
  auto a = at + tls_flags(files.client_cert, files.client_key, files.ca);
  auto b = at + tls_flags(second.first, second.second, files.ca);
  auto admin = at + tls_flags(op.first, op.second, files.ca);
  auto created = run(a + args{"--json", "session", "create"});
  CAF_REQUIRE_EQUAL(created.status, 0);
  auto id
    = sandbox::test::json_lines(created.out).at(0)["id"].get<std::string>();
  CAF_CHECK(contains(run(a + args{"session", "list"}).out, id));
  // B: not in its list; no run in it, no stop of it.
  auto listed = run(b + args{"session", "list"});
  CAF_CHECK_EQUAL(listed.status, 0);
  CAF_CHECK(listed.out.find(id) == std::string::npos);
  auto used = run(b + args{"--session", id, "run", "--", "echo B-WAS-HERE"});
  CAF_CHECK_NOT_EQUAL(used.status, 0);
  CAF_CHECK(used.out.find("B-WAS-HERE") == std::string::npos);
  CAF_CHECK(contains(used.err, "no such session: " + id));
  auto stopped = run(b + args{"session", "stop", id});
  CAF_CHECK_NOT_EQUAL(stopped.status, 0);
  CAF_CHECK(contains(stopped.err, "no such session: " + id));
  // A still runs in it.
  auto own = run(a + args{"--session", id, "run", "--", "echo A"});
  CAF_CHECK_EQUAL(own.status, 0);
  CAF_CHECK_EQUAL(own.out, "A\n");
  // The admin sees it and stops it.
  CAF_CHECK(contains(run(admin + args{"session", "list"}).out, id));
  CAF_CHECK_EQUAL(run(admin + args{"session", "stop", id}).status, 0);
  CAF_CHECK(run(a + args{"session", "list"}).out.find(id) == std::string::npos);
}
