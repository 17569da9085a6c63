// http.auth: bearer tokens and identities (docs/http.md, "Tokens"). A
// token sees only its identity's sessions; a missing or unknown token gets
// 401 and runs nothing; SIGHUP reads the token file again; HTTP on a
// non-loopback address without TLS is refused at start.

#define CAF_SUITE http.auth
#include "caf/test/dsl.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "helpers/check.hpp"
#include "http_fixture.hpp"

using namespace sandbox::test;

namespace {

const std::string alice = "alice-token-0123456789";
const std::string bob = "bob-token-0123456789ab";
const std::string carol = "carol-token-0123456789";

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out{path, std::ios::trunc};
  out << text;
}

struct fixture {
  temp_dir dir;
  std::string tokens = dir.at("tokens");
  std::unique_ptr<http_node> n;

  fixture() {
    write_file(tokens, "# who token\nalice " + alice + "\nbob " + bob
                         + "\ncarol " + carol + "\n");
    n = std::make_unique<http_node>(
      std::vector<std::string>{"--token-file", tokens, "--admin", "carol"});
  }

  http_answer as(const std::string& token, request r) {
    r.token = token;
    return n->send(std::move(r));
  }

  request get(const std::string& path) {
    request r;
    r.path = path;
    return r;
  }

  request post(const std::string& path, const json& body) {
    request r;
    r.method = "POST";
    r.path = path;
    r.headers = {"Content-Type: application/json"};
    r.body = body.dump();
    r.has_body = true;
    return r;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(http_auth, fixture)

CAF_TEST(a token sees only the sessions of its identity) {
  auto made = as(alice, post("/v1/sessions", json::object()));
  CAF_REQUIRE_EQUAL(made.status, 201);
  auto id = made.body_json()["id"].get<std::string>();
  auto path = "/v1/sessions/" + id;
  CAF_CHECK_EQUAL(as(alice, get(path)).status, 200);
  auto theirs = as(bob, get(path));
  CAF_CHECK_EQUAL(theirs.status, 404);
  CAF_CHECK_EQUAL(theirs.body_json()["code"], "session_not_found");
  auto listed = as(bob, get("/v1/sessions")).body_json();
  CAF_CHECK(listed["sessions"].empty());
  // Nothing of bob's reaches alice's session: not a command, not a file.
  auto run = as(bob, post(path + "/exec", {{"command", "touch bob-was-here"}}));
  CAF_CHECK_EQUAL(run.status, 404);
  request del;
  del.method = "DELETE";
  del.path = path;
  CAF_CHECK_EQUAL(as(bob, del).status, 404);
  auto files = as(alice, get(path + "/list")).lines();
  CAF_REQUIRE(!files.empty());
  CAF_CHECK_EQUAL(files.back()["count"], 0);
  // An admin sees and uses every session.
  auto all = as(carol, get("/v1/sessions")).body_json();
  CAF_CHECK_EQUAL(all["sessions"].size(), 1u);
  CAF_CHECK_EQUAL(as(carol, get(path)).status, 200);
  CAF_CHECK_EQUAL(as(carol, del).status, 200);
}

CAF_TEST(a missing or unknown token gets 401 and runs nothing) {
  auto made = as(alice, post("/v1/sessions", json::object()));
  auto id = made.body_json()["id"].get<std::string>();
  auto wd = made.body_json()["working_directory"].get<std::string>();
  auto run = post("/v1/sessions/" + id + "/exec",
                  {{"command", "touch intruder"}});
  run.with_token = false;
  auto none = n->send(run);
  CAF_CHECK_EQUAL(none.status, 401);
  CAF_CHECK_EQUAL(none.body_json()["code"], "unauthorized");
  CAF_CHECK_EQUAL(none.header("www-authenticate"), "Bearer");
  auto wrong = as("not-a-token-0123456789", run);
  CAF_CHECK_EQUAL(wrong.status, 401);
  auto near = as(alice.substr(0, alice.size() - 1) + "X", run);
  CAF_CHECK_EQUAL(near.status, 401);
  request basic = run;
  basic.with_token = false;
  basic.headers.push_back("Authorization: Basic YWxpY2U6eA==");
  CAF_CHECK_EQUAL(n->send(basic).status, 401);
  struct stat st;
  CAF_CHECK_NOT_EQUAL(::stat((wd + "/intruder").c_str(), &st), 0);
  // The MCP endpoint is behind the same door.
  auto mcp = post("/mcp", {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}});
  mcp.with_token = false;
  CAF_CHECK_EQUAL(n->send(mcp).status, 401);
}

CAF_TEST(SIGHUP reads the token file again) {
  write_file(tokens, "alice " + alice + "\ndave dave-token-0123456789\n");
  ::kill(n->node->pid, SIGHUP);
  // The signal is handled on the node's own time: poll for its effect.
  bool switched = false;
  for (int i = 0; i < 1500 && !switched; ++i) {
    switched = as("dave-token-0123456789", get("/v1/sessions")).status == 200;
    if (!switched)
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  CAF_CHECK(switched);
  CAF_CHECK_EQUAL(as(bob, get("/v1/sessions")).status, 401);
  CAF_CHECK_EQUAL(as(alice, get("/v1/sessions")).status, 200);
  // A broken file keeps the tokens there are.
  write_file(tokens, "alice\n");
  ::kill(n->node->pid, SIGHUP);
  bool said = false;
  for (int i = 0; i < 1500 && !said; ++i) {
    said = n->log().find("the old tokens stay") != std::string::npos;
    if (!said)
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  CAF_CHECK(said);
  CAF_CHECK_EQUAL(as(alice, get("/v1/sessions")).status, 200);
  // The node still runs: SIGHUP did not stop it.
  CAF_CHECK_EQUAL(::kill(n->node->pid, 0), 0);
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST(the generated token is private to the node user) {
  http_node n;
  struct stat st;
  CAF_REQUIRE_EQUAL(::stat(n.token_file.c_str(), &st), 0);
  CAF_CHECK_EQUAL(st.st_mode & 0777, 0600u);
  CAF_CHECK_EQUAL(n.token.size(), 48u);
  CAF_CHECK_EQUAL(n.get("/v1/sessions").status, 200);
  auto file = n.token_file;
  n.node->stop(SIGTERM);
  CAF_CHECK_NOT_EQUAL(::stat(file.c_str(), &st), 0);
}

CAF_TEST(serve refuses HTTP it cannot guard) {
  temp_dir d;
  auto out = d.at("out");
  auto err = d.at("err");
  auto status = run_program(
    {SANDBOX_CLI, "serve", "--port", "0", "--http", "0.0.0.0:0"}, out, err);
  CAF_CHECK_EQUAL(status, 2);
  CAF_CHECK(read_all(err).find("requires TLS") != std::string::npos);
  write_file(d.at("tokens"), "alice short\n");
  status = run_program({SANDBOX_CLI, "serve", "--port", "0", "--http",
                        "127.0.0.1:0", "--token-file", d.at("tokens")},
                       out, err);
  CAF_CHECK_EQUAL(status, 1);
  CAF_CHECK(read_all(err).find("line 1") != std::string::npos);
  status = run_program(
    {SANDBOX_CLI, "serve", "--port", "0", "--http", "localhost"}, out, err);
  CAF_CHECK_EQUAL(status, 2);
  CAF_CHECK(read_all(err).find("ADDR:PORT") != std::string::npos);
}

CAF_TEST(HTTPS serves the same API with the node certificate) {
  temp_dir d;
  auto key = d.at("key.pem");
  auto cert = d.at("cert.pem");
  auto made = run_program({"openssl", "req", "-x509", "-newkey", "ec",
                           "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                           "-days", "2", "-subj", "/CN=localhost", "-addext",
                           "subjectAltName=IP:127.0.0.1,DNS:localhost",
                           "-keyout", key, "-out", cert},
                          d.at("out"), d.at("err"));
  CAF_REQUIRE_EQUAL(made, 0);
  // The same files as the CAF door's: the certificate is its own CA here.
  http_node n{{"--tls-cert", cert, "--tls-key", key, "--tls-ca", cert}};
  auto ready = json::parse(n.node->ready);
  CAF_CHECK_EQUAL(ready["http"]["tls"], true);
  n.base.replace(0, 4, "https");
  request r;
  r.path = "/v1/sessions";
  r.extra = {"--cacert", cert};
  auto a = n.send(r);
  CAF_CHECK_EQUAL(a.status, 200);
  CAF_CHECK_EQUAL(a.body_json()["type"], "sessions");
  // Without the CA, curl refuses the certificate; in the clear, the node
  // answers nothing.
  r.extra = {};
  CAF_CHECK_EQUAL(n.send(r).status, 0);
  n.base.replace(0, 5, "http");
  CAF_CHECK_EQUAL(n.send(r).status, 0);
}
