#define CAF_SUITE actors.contained_connections
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The cap on the connections a node forwards for one contained session
// (`isolation_limits::max_connections`, docs/security.md): finding A11 of
// the reliability review, where one session held thousands of forwarded
// connections (two descriptors and 128 KiB of the node each). Skipped only
// where the host cannot give contained sessions.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "contained_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/host_listener.hpp"
#include "helpers/violations.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::isolation_mode;
using sandbox::violation_kind;
using sandbox::actors::blocking_session;
using sandbox::actors::session_config;
using sandbox::test::has_violation;
using sandbox::test::host_can_contain;
using sandbox::test::host_listener;

namespace {

/// The next connection the forwarder made to `dest`, once its `ping`
/// arrived (the test child's `fetch` sends it, then waits for the answer);
/// -1 when none came within a generous bound.
int accept_ping(const host_listener& dest) {
  pollfd p{dest.fd, POLLIN, 0};
  if (::poll(&p, 1, 30000) != 1)
    return -1;
  int c = ::accept(dest.fd, nullptr, nullptr);
  std::string got;
  char buf[16];
  while (got.size() < 5) {
    pollfd q{c, POLLIN, 0};
    if (::poll(&q, 1, 30000) != 1)
      break;
    auto n = ::recv(c, buf, sizeof(buf), 0);
    if (n <= 0)
      break;
    got.append(buf, static_cast<size_t>(n));
  }
  if (got != "ping\n") {
    ::close(c);
    return -1;
  }
  return c;
}

/// Answers a held connection and closes it: its `fetch` prints the answer.
void answer(int c) {
  ::send(c, "pong\n", 5, MSG_NOSIGNAL);
  ::close(c);
}

} // namespace

CAF_TEST(connections beyond max connections are reset and reported) {
  if (!host_can_contain())
    return;
  sandbox::test::temp_dir dir;
  sandbox::actors::embedded_node node{sandbox::test::contained_config()};
  host_listener dest{16};
  session_config cfg;
  cfg.working_directory = dir.path + "/work";
  cfg.home_directory = dir.path + "/home";
  cfg.allow_net
    = std::vector<std::string>{"127.0.0.1:" + std::to_string(dest.port)};
  cfg.limits = sandbox::isolation_limits{};
  cfg.limits->max_connections = 2;
  auto s = blocking_session::create(node, cfg);
  SANDBOX_REQUIRE_OK(s);
  auto fetch = std::string{sandbox::test::test_child()} + " fetch "
               + std::to_string(dest.port);
  // Two fetches that the destination holds: the session's two units.
  auto holder = s->spawn(fetch + " & " + fetch + "; wait");
  SANDBOX_REQUIRE_OK(holder);
  int first = accept_ping(dest);
  int second = accept_ping(dest);
  CAF_CHECK_NOT_EQUAL(first, -1);
  CAF_CHECK_NOT_EQUAL(second, -1);
  // A third, while both are held: reset by the node before it reaches the
  // destination.
  auto third = s->execute(fetch);
  SANDBOX_CHECK_OK(third);
  if (third) {
    CAF_CHECK_EQUAL(third->exit_code, 1);
    CAF_CHECK(third->stdout_data == "ECONNRESET\n"
              || third->stdout_data == "EPIPE\n");
    CAF_MESSAGE("the third fetch printed " << third->stdout_data);
  }
  // Reported to the session (no execution can be named for it).
  auto seen = s->violations();
  SANDBOX_CHECK_OK(seen);
  if (seen)
    CAF_CHECK(
      has_violation(*seen, violation_kind::connection_limit, "connections 2"));
  // The held ones end: their units come back, and a new one goes through.
  answer(first);
  answer(second);
  auto held = holder->wait();
  SANDBOX_CHECK_OK(held);
  if (held)
    CAF_CHECK_EQUAL(held->stdout_data, "pong\npong\n");
  std::thread server{[&] {
    int c = accept_ping(dest);
    if (c >= 0)
      answer(c);
  }};
  auto again = s->execute(fetch);
  server.join();
  SANDBOX_CHECK_OK(again);
  if (again)
    CAF_CHECK_EQUAL(again->stdout_data, "pong\n");
  (void) s->stop();
}

CAF_TEST(sessions get a cap of 256 forwarded connections by default) {
  CAF_CHECK_EQUAL(sandbox::isolation_limits{}.max_connections, 256u);
}
