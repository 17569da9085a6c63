#define CAF_SUITE cli.isolation_net
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// --allow-net (docs/cli.md, docs/security.md): the destinations commands of
// a contained session may connect to. Entries are checked whatever the
// host; what a contained session reaches only where the host can give one
// (a skip says what is missing).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "cli_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/host_listener.hpp"

using sandbox::test::run_shell;
using sandbox::test::sandbox_cli;
using sandbox::test::temp_dir;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

using sandbox::test::host_listener;

} // namespace

CAF_TEST(allow net is only for commands that create a session) {
  temp_dir dir;
  for (auto words :
       {"--session x run -- 'touch ran'", "session list", "session stop x"}) {
    auto r = run_shell("cd '" + dir.path
                       + "' && " SANDBOX_CLI " --allow-net 127.0.0.1:80 "
                       + std::string{words} + " 2>&1");
    CAF_CHECK_EQUAL(r.status, 2);
    CAF_CHECK(has(r.out, "--allow-net sets the destinations"));
    CAF_CHECK(::access(dir.at("ran").c_str(), F_OK) != 0);
  }
}

CAF_TEST(an invalid entry is refused naming it and no session is made) {
  temp_dir dir;
  for (auto entry : {"127.0.0.1", "127.0.0.1:0", "0.0.0.0:80", "::1:80"}) {
    auto r = sandbox_cli("--json --isolation contained --allow-net '"
                         + std::string{entry} + "' session create --workdir '"
                         + dir.at("w") + "'");
    CAF_CHECK_EQUAL(r.status, 1);
    CAF_CHECK(has(r.out, "\"code\":\"invalid_argument\""));
    if (!has(r.out, entry))
      CAF_FAIL("the error does not name " << entry << ": " << r.out);
    CAF_CHECK(::access(dir.at("w").c_str(), F_OK) != 0);
  }
  // A session that is not contained has the host's network already.
  auto r = sandbox_cli("--isolation none --allow-net 127.0.0.1:80 session "
                       "create --workdir '"
                         + dir.at("w") + "'",
                       true);
  CAF_CHECK_EQUAL(r.status, 1);
  CAF_CHECK(has(r.out, "applies to contained sessions only"));
  if (sandbox::test::remote_mode())
    return; // serve takes no --node, which the stand-in would add
  // serve checks its default before it listens.
  auto s = run_shell("timeout -s KILL 30 " SANDBOX_CLI
                     " serve --port 0 --allow-net nope 2>&1");
  CAF_CHECK_EQUAL(s.status, 1);
  CAF_CHECK(has(s.out, "nope"));
  CAF_CHECK(!has(s.out, "listening on"));
}

CAF_TEST(a command reaches an allowed host server and no other port) {
  if (!sandbox::test::host_can_contain())
    return;
  if (sandbox::test::remote_mode()) {
    // The stand-in runs commands in a session it made (--session).
    CAF_MESSAGE("skipped: run --allow-net creates the session itself");
    return;
  }
  host_listener allowed;
  host_listener other;
  std::thread server{[&] {
    int c = ::accept(allowed.fd, nullptr, nullptr);
    char buf[64];
    while (::recv(c, buf, sizeof(buf), 0) > 0)
      ;
    ::send(c, "pong\n", 5, MSG_NOSIGNAL);
    ::close(c);
  }};
  auto child = sandbox::test::visible_program(SANDBOX_TEST_CHILD);
  // The helper program's directory is in the session's view.
  auto see = " --allow-read " + child.substr(0, child.rfind('/'));
  auto r = sandbox_cli("--isolation contained" + see + " --allow-net 127.0.0.1:"
                       + std::to_string(allowed.port) + " run -- " + child
                       + " fetch " + std::to_string(allowed.port));
  server.join();
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "pong\n");
  auto denied = sandbox_cli("--isolation contained" + see
                            + " --allow-net 127.0.0.1:"
                            + std::to_string(allowed.port) + " run -- " + child
                            + " fetch " + std::to_string(other.port));
  CAF_CHECK_EQUAL(denied.status, 1);
  CAF_CHECK_EQUAL(denied.out, "ECONNREFUSED\n");
}
