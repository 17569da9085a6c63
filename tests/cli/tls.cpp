#define CAF_SUITE cli.tls
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// `sandbox serve` with mutual TLS and `--node` clients, end to end: real
// processes on free loopback ports, certificates made at test time.

#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "helpers/serve_process.hpp"
#include "helpers/tls_files.hpp"

using sandbox::test::serve_process;
using sandbox::test::spawn_cli;
using sandbox::test::spawn_result;
using sandbox::test::tls_files;

namespace {

using args = std::vector<std::string>;

args tls_flags(const std::string& cert, const std::string& key,
               const std::string& ca) {
  return {"--tls-cert", cert, "--tls-key", key, "--tls-ca", ca};
}

args operator+(args x, const args& y) {
  x.insert(x.end(), y.begin(), y.end());
  return x;
}

size_t lines(const std::string& text) {
  size_t n = 0;
  for (char c : text)
    n += c == '\n';
  return n;
}

bool contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos)
    return true;
  CAF_MESSAGE("'" << text << "' does not contain '" << part << "'");
  return false;
}

// Runs `sandbox ARGS` with a short limit: a refusal must not hang.
spawn_result run(const args& a) {
  sandbox::test::spawn_options o;
  o.limit_seconds = 30;
  return spawn_cli(a, o);
}

/// Checks that `r` is a refusal at start: the process ended by itself with
/// `status`, one line on stderr containing `part`, nothing announced.
void check_refused_at_start(const spawn_result& r, int status,
                            const std::string& part) {
  CAF_CHECK(r.exited);
  CAF_CHECK_EQUAL(r.status, status);
  CAF_CHECK_EQUAL(lines(r.err), 1u);
  CAF_CHECK(contains(r.err, part));
  CAF_CHECK(r.out.find("listening") == std::string::npos);
}

struct fixture {
  tls_files files;

  args node_tls() const {
    return tls_flags(files.node_cert, files.node_key, files.ca);
  }

  args client_tls() const {
    return tls_flags(files.client_cert, files.client_key, files.ca);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(cli_tls_tests, fixture)

CAF_TEST(a client with valid flags runs a command on a TLS node) {
  serve_process srv{node_tls()};
  CAF_CHECK(contains(srv.ready, "listening on 127.0.0.1:"));
  auto r = run(args{"--node", srv.address} + client_tls()
               + args{"run", "--", "echo", "hi"});
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "hi\n");
}

CAF_TEST(clients the TLS node does not trust get one line and exit 1) {
  auto log = files.dir.at("node.log");
  serve_process srv{node_tls(), log};
  auto node = "node " + srv.address + " is unreachable: ";
  // Another CA's certificate.
  auto r
    = run(args{"--node", srv.address}
          + tls_flags(files.other_client_cert, files.other_client_key, files.ca)
          + args{"run", "--", "echo", "hi"});
  CAF_CHECK(r.exited);
  CAF_CHECK_EQUAL(r.status, 1);
  CAF_CHECK_EQUAL(r.out, "");
  CAF_CHECK_EQUAL(lines(r.err), 1u);
  CAF_CHECK(contains(r.err, node + "TLS handshake failed: the node "));
  // The node logged why before it closed the connection.
  CAF_CHECK(contains(tls_files::read(log), "refused TLS handshake with "
                                           "127.0.0.1:"));
  CAF_CHECK(contains(tls_files::read(log), "unable to get local issuer "
                                           "certificate"));
  // No TLS flags at all.
  r = run(args{"--node", srv.address, "run", "--", "echo", "hi"});
  CAF_CHECK(r.exited);
  CAF_CHECK_EQUAL(r.status, 1);
  CAF_CHECK_EQUAL(lines(r.err), 1u);
  CAF_CHECK(contains(r.err, node
                              + "the connection ended during the "
                                "handshake"));
  // A client that does not trust the node's CA refuses the node.
  r = run(
    args{"--node", srv.address}
    + tls_flags(files.other_client_cert, files.other_client_key, files.other_ca)
    + args{"run", "--", "echo", "hi"});
  CAF_CHECK_EQUAL(r.status, 1);
  CAF_CHECK(contains(r.err, node
                              + "TLS handshake failed: the node's "
                                "certificate did not verify against "
                                "--tls-ca"));
  // The node still serves a valid client.
  r = run(args{"--node", srv.address} + client_tls()
          + args{"run", "--", "echo", "still"});
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "still\n");
}

CAF_TEST(serve refuses bad TLS files with one line and starts nothing) {
  auto base = args{"serve", "--port", "0"};
  auto r = run(
    base + tls_flags(files.dir.at("missing.pem"), files.node_key, files.ca));
  check_refused_at_start(r, 1,
                         "cannot read the TLS certificate "
                           + files.dir.at("missing.pem")
                           + " (--tls-cert): No such file or directory");
  r = run(base + tls_flags(files.node_cert, files.stray_key, files.ca));
  check_refused_at_start(r, 1,
                         "the TLS key " + files.stray_key
                           + " (--tls-key) does not match the TLS "
                             "certificate "
                           + files.node_cert);
  r = run(base + args{"--tls-cert", files.node_cert, "--tls-ca", files.ca});
  check_refused_at_start(r, 2, "--tls-key (the TLS key) is missing");
  auto junk = files.write("junk.pem", "junk\n");
  r = run(base + tls_flags(files.node_cert, files.node_key, junk));
  check_refused_at_start(r, 1, "the TLS CA " + junk + " (--tls-ca)");
}

CAF_TEST(a client with bad TLS files is refused before it connects) {
  // No node is needed: the files are checked first.
  auto r = run(args{"--node", "127.0.0.1:1"}
               + tls_flags(files.client_cert, files.stray_key, files.ca)
               + args{"run", "--", "echo", "hi"});
  CAF_CHECK(r.exited);
  CAF_CHECK_EQUAL(r.status, 1);
  CAF_CHECK_EQUAL(lines(r.err), 1u);
  CAF_CHECK(contains(r.err, "does not match the TLS certificate"));
}

CAF_TEST(a non loopback bind without TLS is refused before binding) {
  auto r = run(args{"serve", "--bind", "0.0.0.0", "--port", "0"});
  check_refused_at_start(r, 2, "--bind 0.0.0.0 is not a loopback address");
}

CAF_TEST(a non loopback bind with TLS is served) {
  serve_process srv{args{"--bind", "0.0.0.0"} + node_tls()};
  CAF_CHECK(contains(srv.ready, "listening on 0.0.0.0:"));
  auto port = srv.address.substr(srv.address.rfind(':') + 1);
  auto r = run(args{"--node", "127.0.0.1:" + port} + client_tls()
               + args{"run", "--", "echo", "hi"});
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "hi\n");
}

CAF_TEST_FIXTURE_SCOPE_END()
