#define CAF_SUITE cli.options
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Every option shown by --help does something (docs/cli.md): a global
// option that would change nothing for the chosen subcommand is a usage
// error that starts nothing. The real CLI (in the remote mode, too, since
// the stand-in would add --node).

#include <string>

#include "cli_fixture.hpp"
#include "helpers/can_contain.hpp"

using sandbox::test::run_shell;
using sandbox::test::temp_dir;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST(TLS files without a connection are a usage error) {
  temp_dir dir;
  // The files need not exist: nothing is read before the usage error.
  for (auto flags : {"--tls-cert c.pem --tls-key k.pem --tls-ca ca.pem",
                     "--tls-ca ca.pem"}) {
    auto r = run_shell("cd '" + dir.path + "' && " SANDBOX_CLI " "
                       + std::string{flags} + " run -- 'touch ran' 2>&1");
    CAF_CHECK_EQUAL(r.status, 2);
    CAF_CHECK(has(r.out, "they need --node (or the serve subcommand)"));
    CAF_CHECK(::access(dir.at("ran").c_str(), F_OK) != 0);
  }
}

CAF_TEST(serve takes no node or session) {
  for (auto flags : {"--node 127.0.0.1:1", "--session x"}) {
    auto r = run_shell("timeout -s KILL 30 " SANDBOX_CLI " serve --port 0 "
                       + std::string{flags} + " 2>&1");
    CAF_CHECK_EQUAL(r.status, 2);
    CAF_CHECK(has(r.out, "is for clients of a node"));
    // Nothing listened.
    CAF_CHECK(!has(r.out, "listening on"));
  }
}

CAF_TEST(the session subcommands take no session option) {
  for (auto sub : {"create", "list", "stop x"}) {
    auto r = run_shell(SANDBOX_CLI " --session x session " + std::string{sub}
                       + " 2>&1");
    CAF_CHECK_EQUAL(r.status, 2);
    CAF_CHECK(has(r.out, "session: --session names the session of run"));
  }
}

CAF_TEST(isolation is only for commands that create a session) {
  temp_dir dir;
  for (auto words :
       {"--session x run -- 'touch ran'", "session list", "session stop x"}) {
    auto r = run_shell("cd '" + dir.path
                       + "' && " SANDBOX_CLI " --isolation none "
                       + std::string{words} + " 2>&1");
    CAF_CHECK_EQUAL(r.status, 2);
    CAF_CHECK(has(r.out, "--isolation sets the isolation of the sessions"));
    CAF_CHECK(::access(dir.at("ran").c_str(), F_OK) != 0);
  }
}

CAF_TEST(SANDBOX_ISOLATION stands for isolation where a session is made) {
  temp_dir dir;
  auto in_dir = [&](const std::string& env, const std::string& words) {
    return run_shell("cd '" + dir.path + "' && env " + env + " " SANDBOX_CLI " "
                     + words + " 2>&1");
  };
  // --isolation wins over it.
  auto none = in_dir("SANDBOX_ISOLATION=contained",
                     "--isolation none --json session create");
  CAF_CHECK_EQUAL(none.status, 0);
  CAF_CHECK(has(none.out, "\"isolation\":\"none\""));
  auto made = in_dir("SANDBOX_ISOLATION=contained", "--json session create");
  if (sandbox::test::host_can_contain()) {
    CAF_CHECK_EQUAL(made.status, 0);
    CAF_CHECK(has(made.out, "\"isolation\":\"contained\""));
  } else {
    // Refused naming what is missing, as --isolation contained would be.
    CAF_CHECK_EQUAL(made.status, 1);
    CAF_CHECK(has(made.out, "cannot create a contained session"));
  }
  // Another value is a usage error naming the variable; nothing runs.
  auto bad = in_dir("SANDBOX_ISOLATION=strict", "run -- 'touch ran'");
  CAF_CHECK_EQUAL(bad.status, 2);
  CAF_CHECK(has(bad.out, "SANDBOX_ISOLATION expects none or contained, got "
                         "strict"));
  CAF_CHECK(::access(dir.at("ran").c_str(), F_OK) != 0);
  // Where nothing is made it is ignored: no usage error, unlike the option.
  auto list = in_dir("SANDBOX_ISOLATION=strict", "session list");
  CAF_CHECK_EQUAL(list.status, 0);
  auto named = in_dir("SANDBOX_ISOLATION=contained",
                      "--session x run -- 'touch ran'");
  CAF_CHECK_EQUAL(named.status, 1);
  CAF_CHECK(has(named.out, "x"));
  CAF_CHECK(!has(named.out, "--isolation"));
}

CAF_TEST(help shows what each TLS option is for) {
  auto r = run_shell(SANDBOX_CLI " --help");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK(has(r.out, "mutual TLS with --node or in serve"));
}
