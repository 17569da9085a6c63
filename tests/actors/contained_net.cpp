#define CAF_SUITE actors.contained_net
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The network of contained sessions (docs/security.md): the leased port is
// forwarded from the host into the session, and allowed destinations out
// of it. Everything runs on loopback, on ports the kernel picked. Skipped,
// with the reason, only where the host cannot give contained sessions.

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "contained_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/host_listener.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::errc;
using sandbox::isolation_mode;
using sandbox::actors::blocking_session;
using sandbox::actors::session_config;
using sandbox::test::host_can_contain;
using sandbox::test::host_listener;

namespace {

sockaddr_in loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

/// A connection of the test to 127.0.0.1:`port` of the host; -1 if refused.
int connect_host(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    auto w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0)
      return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

/// Reads until EOF (or an error, or `max` bytes). A fail-safe poll of 20 s
/// turns a hang into a failure instead of a stuck suite.
std::string read_until_eof(int fd, size_t max = SIZE_MAX,
                           bool* ended = nullptr) {
  std::string out;
  std::vector<char> buf(1 << 16);
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20000) != 1)
      return out;
    auto n = ::recv(fd, buf.data(), std::min(buf.size(), max - out.size()), 0);
    if (n <= 0) {
      if (ended != nullptr)
        *ended = true;
      return out;
    }
    out.append(buf.data(), static_cast<size_t>(n));
    if (out.size() == max)
      return out;
  }
}

/// Sockets open in this process (`socket:[...]`).
size_t open_sockets() {
  size_t n = 0;
  auto all = sandbox::test::plumbing_fds().targets;
  for (size_t at = 0; (at = all.find("socket:[", at)) != std::string::npos;
       ++at)
    ++n;
  return n;
}

struct fixture : sandbox::test::contained_fixture {
  fixture() {
    // A node either way: the refusal of invalid allowlists needs no
    // containment.
    auto cfg = sandbox::test::node_fixture::config();
    if (sandbox::host_isolation().missing().empty())
      cfg.isolation = isolation_mode::contained;
    node = std::make_unique<sandbox::actors::embedded_node>(cfg);
  }

  blocking_session make_session(std::vector<std::string> allow = {}) {
    session_config cfg;
    if (!allow.empty())
      cfg.allow_net = std::move(allow);
    return contained_fixture::make_session(cfg);
  }

  static uint16_t port_of(blocking_session& s) {
    auto info = s.info();
    if (!info)
      throw std::runtime_error(info.error().message);
    return info->port;
  }
};

/// The test child's echo server, run in `s` on its leased port by a thread
/// of the test until the session stops; the constructor returns once the
/// server printed that it listens (inside the session).
struct echo_server {
  blocking_session& session;
  std::thread runner;

  echo_server(blocking_session& s, uint16_t port) : session(s) {
    std::promise<void> listening;
    auto f = listening.get_future();
    runner = std::thread{[&s, port, &listening] {
      bool told = false;
      auto r = s.execute_streaming(
        std::string{sandbox::test::test_child()} + " echo-server "
          + std::to_string(port),
        {}, [&](const sandbox::output_chunk& c) {
          if (!told && c.data.find("listening") != std::string::npos) {
            told = true;
            listening.set_value();
          }
        });
      if (!told)
        listening.set_exception(std::make_exception_ptr(std::runtime_error(
          "echo server ended: " + (r ? r->stdout_data : r.error().message))));
    }};
    try {
      f.get();
    } catch (const std::exception& e) {
      runner.join();
      CAF_FAIL(e.what());
    }
  }

  /// The stop (idempotent) ends the server's execution.
  ~echo_server() {
    (void) session.stop();
    runner.join();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(contained_net_tests, fixture)

CAF_TEST(a server inside is reached at the endpoint with bytes both ways) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto port = port_of(s);
  {
    echo_server server{s, port};
    int c = connect_host(port);
    CAF_REQUIRE_NOT_EQUAL(c, -1);
    CAF_REQUIRE(send_all(c, "hello\n", 6));
    CAF_CHECK_EQUAL(read_until_eof(c, 6), "hello\n");
    // Our half-close reaches the server, which still answers, then closes.
    CAF_REQUIRE_EQUAL(::shutdown(c, SHUT_WR), 0);
    bool ended = false;
    CAF_CHECK_EQUAL(read_until_eof(c, SIZE_MAX, &ended), "bye\n");
    CAF_CHECK(ended);
    ::close(c);
    // A second connection works as well.
    int d = connect_host(port);
    CAF_REQUIRE_NOT_EQUAL(d, -1);
    CAF_REQUIRE(send_all(d, "again\n", 6));
    ::shutdown(d, SHUT_WR);
    CAF_CHECK_EQUAL(read_until_eof(d), "again\nbye\n");
    ::close(d);
    (void) s.stop();
  }
}

CAF_TEST(eight mebibytes cross the forward intact) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto port = port_of(s);
  echo_server server{s, port};
  std::string data(8u << 20, '\0');
  uint32_t x = 12345;
  for (auto& ch : data) {
    x = x * 1103515245u + 12345u;
    ch = static_cast<char>(x >> 24);
  }
  int c = connect_host(port);
  CAF_REQUIRE_NOT_EQUAL(c, -1);
  std::thread writer{[c, &data] {
    send_all(c, data.data(), data.size());
    ::shutdown(c, SHUT_WR);
  }};
  bool ended = false;
  auto back = read_until_eof(c, SIZE_MAX, &ended);
  writer.join();
  ::close(c);
  CAF_CHECK(ended);
  CAF_CHECK_EQUAL(back.size(), data.size() + 4);
  CAF_CHECK(back.compare(0, data.size(), data) == 0);
  CAF_CHECK(back.compare(data.size(), 4, "bye\n") == 0);
  (void) s.stop();
}

CAF_TEST(a connection while nothing listens inside ends at once) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto port = port_of(s);
  // Before the session's first command (no namespace yet), then after it.
  for (int round = 0; round < 2; ++round) {
    int c = connect_host(port);
    CAF_REQUIRE_NOT_EQUAL(c, -1);
    pollfd p{c, POLLIN, 0};
    CAF_CHECK_EQUAL(::poll(&p, 1, 20000), 1);
    char b;
    CAF_CHECK_LESS_OR_EQUAL(::recv(c, &b, 1, 0), 0);
    ::close(c);
    if (round == 0) {
      auto r = s.execute("true");
      SANDBOX_REQUIRE_OK(r);
    }
  }
  (void) s.stop();
}

CAF_TEST(the stop frees the host port and leaves no socket behind) {
  if (!host_can_contain())
    return;
  auto before = open_sockets();
  uint16_t port = 0;
  int c = -1;
  {
    auto s = make_session();
    port = port_of(s);
    echo_server server{s, port};
    c = connect_host(port);
    CAF_REQUIRE_NOT_EQUAL(c, -1);
    CAF_REQUIRE(send_all(c, "x", 1));
    CAF_CHECK_EQUAL(read_until_eof(c, 1), "x");
    auto receipt = s.stop();
    SANDBOX_REQUIRE_OK(receipt);
  }
  // The open connection ended with the session.
  bool ended = false;
  read_until_eof(c, SIZE_MAX, &ended);
  CAF_CHECK(ended);
  ::close(c);
  CAF_CHECK_EQUAL(open_sockets(), before);
  // Nothing listens on the port any more: the host can take it.
  CAF_CHECK_EQUAL(connect_host(port), -1);
  int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  ::setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  auto addr = loopback(port);
  CAF_CHECK_EQUAL(::bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
                  0);
  CAF_CHECK_EQUAL(::listen(l, 1), 0);
  ::close(l);
}

CAF_TEST(an allowed host server is reachable from inside and nothing else) {
  if (!host_can_contain())
    return;
  host_listener allowed;
  host_listener other;
  std::promise<std::string> received;
  std::thread server{[&] {
    int c = ::accept(allowed.fd, nullptr, nullptr);
    received.set_value(read_until_eof(c));
    send_all(c, "pong\n", 5);
    ::close(c);
  }};
  auto s = make_session({"127.0.0.1:" + std::to_string(allowed.port)});
  auto r = s.execute(std::string{sandbox::test::test_child()} + " fetch "
                     + std::to_string(allowed.port));
  SANDBOX_REQUIRE_OK(r);
  server.join();
  CAF_CHECK_EQUAL(r->exit_code, 0);
  CAF_CHECK_EQUAL(r->stdout_data, "pong\n");
  CAF_CHECK_EQUAL(received.get_future().get(), "ping\n");
  auto denied = s.execute(std::string{sandbox::test::test_child()} + " fetch "
                          + std::to_string(other.port));
  SANDBOX_REQUIRE_OK(denied);
  CAF_CHECK_EQUAL(denied->exit_code, 1);
  CAF_CHECK_EQUAL(denied->stdout_data, "ECONNREFUSED\n");
  // The allowed port is the host's now: the session cannot serve on it.
  auto serve = s.execute(std::string{sandbox::test::test_child()}
                         + " echo-server " + std::to_string(allowed.port));
  SANDBOX_REQUIRE_OK(serve);
  CAF_CHECK_EQUAL(serve->stdout_data, "listen: EADDRINUSE\n");
  // An address outside the loopback and not allowed has no route.
  auto away = s.execute(std::string{sandbox::test::test_child()}
                        + " fetch 80 192.0.2.1");
  SANDBOX_REQUIRE_OK(away);
  CAF_CHECK_EQUAL(away->stdout_data, "ENETUNREACH\n");
  (void) s.stop();
}

CAF_TEST(an allowed address of the host beyond loopback gets forwarded) {
  if (!host_can_contain())
    return;
  // One of the host's own IPv4 addresses (traffic to it stays in the
  // host): inside, the node adds it to the session's loopback.
  std::string address;
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) == 0) {
    for (auto* i = all; i != nullptr && address.empty(); i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET)
        continue;
      auto* in = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
      if ((ntohl(in->sin_addr.s_addr) >> 24) == 127)
        continue;
      char buf[INET_ADDRSTRLEN];
      address = ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    }
    ::freeifaddrs(all);
  }
  if (address.empty()) {
    CAF_MESSAGE("skipped: the host has no IPv4 address besides loopback");
    return;
  }
  int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
  socklen_t len = sizeof(addr);
  CAF_REQUIRE_EQUAL(::bind(l, reinterpret_cast<sockaddr*>(&addr), len), 0);
  CAF_REQUIRE_EQUAL(::listen(l, 4), 0);
  CAF_REQUIRE_EQUAL(::getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len),
                    0);
  auto port = ntohs(addr.sin_port);
  std::thread server{[l] {
    int c = ::accept(l, nullptr, nullptr);
    read_until_eof(c);
    send_all(c, "far\n", 4);
    ::close(c);
  }};
  auto s = make_session({address + ":" + std::to_string(port)});
  auto r = s.execute(std::string{sandbox::test::test_child()} + " fetch "
                     + std::to_string(port) + " " + address);
  SANDBOX_REQUIRE_OK(r);
  server.join();
  ::close(l);
  CAF_CHECK_EQUAL(r->stdout_data, "far\n");
  // Another port of that address is refused inside.
  auto other = s.execute(std::string{sandbox::test::test_child()} + " fetch "
                         + std::to_string(port == 1 ? 2 : port - 1) + " "
                         + address);
  SANDBOX_REQUIRE_OK(other);
  CAF_CHECK_EQUAL(other->stdout_data, "ECONNREFUSED\n");
  (void) s.stop();
}

CAF_TEST(invalid allowlist entries are refused naming them) {
  for (auto entry :
       {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "::1:80", "[::1:80",
        "0.0.0.0:80", "224.0.0.1:80", "a b:80", ":80", "127.0.0.1:8x"}) {
    session_config cfg;
    cfg.working_directory = dir.path + "/work";
    cfg.isolation = isolation_mode::contained;
    cfg.allow_net = std::vector<std::string>{entry};
    auto s = blocking_session::create(*node, cfg);
    CAF_REQUIRE(!s);
    CAF_CHECK_EQUAL(s.error().code, errc::invalid_argument);
    if (s.error().message.find(entry) == std::string::npos)
      CAF_FAIL("the message does not name " << entry << ": "
                                            << s.error().message);
  }
  // A session that is not contained has the host's network: an allowlist
  // there is a mistake, not a no-op.
  session_config cfg;
  cfg.working_directory = dir.path + "/work";
  cfg.isolation = isolation_mode::none;
  cfg.allow_net = std::vector<std::string>{"127.0.0.1:80"};
  auto s = blocking_session::create(*node, cfg);
  CAF_REQUIRE(!s);
  CAF_CHECK_EQUAL(s.error().code, errc::invalid_argument);
  // The node's default is checked when the node starts.
  sandbox::actors::runtime_config rcfg;
  rcfg.allow_net = {"nope"};
  auto ok = sandbox::actors::validate(rcfg);
  CAF_REQUIRE(!ok);
  CAF_CHECK_EQUAL(ok.error().code, errc::invalid_argument);
  CAF_CHECK(ok.error().message.find("nope") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
