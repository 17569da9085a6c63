#define CAF_SUITE libsandbox.tcp_forwarder
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The forwarder that carries a contained session's network
// (docs/security.md), here between host sockets on loopback, so that it is
// checked on every host; and the allowlist's entries.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/contain/session_net.hpp"
#include "sandbox/contain/tcp_forwarder.hpp"
#include "sandbox/io/reactor.hpp"

using namespace sandbox;

namespace {

sockaddr_in loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

uint16_t port_of(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

/// A listener on 127.0.0.1, on a port the kernel picks.
unique_fd listener() {
  auto addr = loopback(0);
  auto fd = listen_tcp(reinterpret_cast<sockaddr*>(&addr), sizeof(addr),
                       "test");
  if (!fd)
    throw std::runtime_error(fd.error().message);
  return std::move(*fd);
}

int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto addr = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Reads until EOF or an error; a 20 s fail-safe poll turns a hang into a
/// failure. `ended`: EOF or error seen.
std::string drain(int fd, bool* ended = nullptr) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20000) != 1)
      return out;
    auto n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      if (ended != nullptr)
        *ended = true;
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

tcp_forwarder::socket_factory host_sockets() {
  return []() -> result<unique_fd> {
    return unique_fd{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  };
}

struct fixture {
  reactor r{1};
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(tcp_forwarder_tests, fixture)

CAF_TEST(bytes and the half close travel both ways) {
  auto back = listener();
  auto front = listener();
  auto front_port = port_of(front.get());
  auto dest = loopback(port_of(back.get()));
  auto f = tcp_forwarder::start(r, std::move(front),
                                reinterpret_cast<sockaddr*>(&dest),
                                sizeof(dest), host_sockets(), "test");
  SANDBOX_REQUIRE_OK(f);
  std::string got;
  std::thread server{[&] {
    int c = ::accept(back.get(), nullptr, nullptr);
    got = drain(c);
    // After the client's half-close the answer still goes back.
    ::send(c, "answer", 6, MSG_NOSIGNAL);
    ::close(c);
  }};
  int c = connect_to(front_port);
  CAF_REQUIRE_NOT_EQUAL(c, -1);
  ::send(c, "question", 8, MSG_NOSIGNAL);
  ::shutdown(c, SHUT_WR);
  bool ended = false;
  CAF_CHECK_EQUAL(drain(c, &ended), "answer");
  CAF_CHECK(ended);
  server.join();
  CAF_CHECK_EQUAL(got, "question");
  ::close(c);
  (*f)->stop();
}

CAF_TEST(a destination that refuses resets the connection at once) {
  auto front = listener();
  auto front_port = port_of(front.get());
  // A port nothing listens on: bound, never listened.
  int closed = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  auto any = loopback(0);
  ::bind(closed, reinterpret_cast<sockaddr*>(&any), sizeof(any));
  auto dest = loopback(port_of(closed));
  auto f = tcp_forwarder::start(r, std::move(front),
                                reinterpret_cast<sockaddr*>(&dest),
                                sizeof(dest), host_sockets(), "test");
  SANDBOX_REQUIRE_OK(f);
  int c = connect_to(front_port);
  CAF_REQUIRE_NOT_EQUAL(c, -1);
  bool ended = false;
  CAF_CHECK_EQUAL(drain(c, &ended), "");
  CAF_CHECK(ended);
  ::close(c);
  // Without a factory, too.
  (*f)->set_factory(nullptr);
  c = connect_to(front_port);
  CAF_REQUIRE_NOT_EQUAL(c, -1);
  ended = false;
  drain(c, &ended);
  CAF_CHECK(ended);
  ::close(c);
  ::close(closed);
  (*f)->stop();
}

CAF_TEST(stop closes the listener and every connection) {
  auto back = listener();
  auto front = listener();
  auto front_port = port_of(front.get());
  auto dest = loopback(port_of(back.get()));
  auto f = tcp_forwarder::start(r, std::move(front),
                                reinterpret_cast<sockaddr*>(&dest),
                                sizeof(dest), host_sockets(), "test");
  SANDBOX_REQUIRE_OK(f);
  int c = connect_to(front_port);
  CAF_REQUIRE_NOT_EQUAL(c, -1);
  int s = ::accept(back.get(), nullptr, nullptr);
  // Both ends are connected once a byte went through.
  ::send(c, "x", 1, MSG_NOSIGNAL);
  char b;
  CAF_REQUIRE_EQUAL(::recv(s, &b, 1, 0), 1);
  CAF_CHECK_EQUAL((*f)->connections(), 1u);
  (*f)->stop();
  CAF_CHECK_EQUAL((*f)->connections(), 0u);
  bool ended = false;
  drain(c, &ended);
  CAF_CHECK(ended);
  ended = false;
  drain(s, &ended);
  CAF_CHECK(ended);
  ::close(c);
  ::close(s);
  CAF_CHECK_EQUAL(connect_to(front_port), -1);
}

CAF_TEST(a shared budget resets connections beyond it and reports once) {
  auto back = listener();
  auto front_a = listener();
  auto front_b = listener();
  auto port_a = port_of(front_a.get());
  auto port_b = port_of(front_b.get());
  auto dest = loopback(port_of(back.get()));
  std::mutex mtx;
  std::vector<std::string> refused;
  auto budget
    = std::make_shared<connection_budget>(2, [&](const std::string& forwarder) {
        std::lock_guard<std::mutex> guard{mtx};
        refused.push_back(forwarder);
      });
  auto a = tcp_forwarder::start(r, std::move(front_a),
                                reinterpret_cast<sockaddr*>(&dest),
                                sizeof(dest), host_sockets(), "a", budget);
  SANDBOX_REQUIRE_OK(a);
  auto b = tcp_forwarder::start(r, std::move(front_b),
                                reinterpret_cast<sockaddr*>(&dest),
                                sizeof(dest), host_sockets(), "b", budget);
  SANDBOX_REQUIRE_OK(b);
  // One connection through each forwarder: both reach the destination.
  int c1 = connect_to(port_a);
  int c2 = connect_to(port_b);
  CAF_REQUIRE_NOT_EQUAL(c1, -1);
  CAF_REQUIRE_NOT_EQUAL(c2, -1);
  int s1 = ::accept(back.get(), nullptr, nullptr);
  int s2 = ::accept(back.get(), nullptr, nullptr);
  CAF_REQUIRE(s1 >= 0 && s2 >= 0);
  CAF_CHECK_EQUAL(budget->in_use(), 2u);
  // Two more, one per forwarder: both reset, without reaching the
  // destination; the refusal is reported once.
  for (auto port : {port_a, port_b}) {
    int c = connect_to(port);
    CAF_REQUIRE_NOT_EQUAL(c, -1);
    bool ended = false;
    CAF_CHECK_EQUAL(drain(c, &ended), "");
    CAF_CHECK(ended);
    ::close(c);
  }
  {
    std::lock_guard<std::mutex> guard{mtx};
    CAF_CHECK_EQUAL(refused, std::vector<std::string>{"a"});
  }
  CAF_CHECK_EQUAL(budget->in_use(), 2u);
  // One ends: its unit comes back, and a new connection goes through.
  // The forwarder shuts c1 down for writing and gives the unit back in one
  // step under its lock, and it accepts under that lock: once c1 reads its
  // end, the unit is back for the next accept.
  ::shutdown(c1, SHUT_WR);
  bool ended = false;
  drain(s1, &ended);
  CAF_CHECK(ended);
  ::close(s1);
  ended = false;
  drain(c1, &ended);
  CAF_CHECK(ended);
  ::close(c1);
  int c3 = connect_to(port_b);
  CAF_REQUIRE_NOT_EQUAL(c3, -1);
  ::send(c3, "y", 1, MSG_NOSIGNAL);
  int s3 = ::accept(back.get(), nullptr, nullptr);
  CAF_REQUIRE(s3 >= 0);
  char y = 0;
  CAF_CHECK_EQUAL(::recv(s3, &y, 1, 0), 1);
  CAF_CHECK_EQUAL(y, 'y');
  for (int fd : {c2, s2, c3, s3})
    ::close(fd);
  (*a)->stop();
  (*b)->stop();
  CAF_CHECK_EQUAL(budget->in_use(), 0u);
}

CAF_TEST(allowlist entries are parsed and resolved and checked) {
  auto ok = resolve_allowlist({"127.0.0.1:80", "[::1]:443", "127.0.0.1:80"});
  SANDBOX_REQUIRE_OK(ok);
  CAF_REQUIRE_EQUAL(ok->size(), 2u);
  CAF_CHECK_EQUAL((*ok)[0].address, "127.0.0.1");
  CAF_CHECK_EQUAL((*ok)[0].port, 80);
  CAF_CHECK((*ok)[0].loopback());
  CAF_CHECK_EQUAL((*ok)[1].address, "::1");
  CAF_CHECK((*ok)[1].loopback());
  auto far = resolve_allowlist({"192.0.2.1:8080"});
  SANDBOX_REQUIRE_OK(far);
  CAF_CHECK(!(*far)[0].loopback());
  for (auto bad : {"x", "1.2.3.4", "1.2.3.4:", "1.2.3.4:0", "1.2.3.4:65536",
                   "::1:80", "[::1:80", "[]:80", "0.0.0.0:1", "[::]:1",
                   "255.255.255.255:1", "239.1.1.1:1", "a/b:1"}) {
    auto r = resolve_allowlist({bad});
    CAF_REQUIRE(!r);
    CAF_CHECK_EQUAL(r.error().code, errc::invalid_argument);
    if (r.error().message.find(bad) == std::string::npos)
      CAF_FAIL("not named: " << r.error().message);
  }
}

CAF_TEST(a port another listener holds is port_unavailable naming it) {
  auto held = listener();
  auto port = port_of(held.get());
  auto addr = loopback(port);
  auto taken = listen_tcp(reinterpret_cast<sockaddr*>(&addr), sizeof(addr),
                          "127.0.0.1:" + std::to_string(port));
  CAF_REQUIRE(!taken);
  CAF_CHECK_EQUAL(taken.error().code, errc::port_unavailable);
  CAF_CHECK_NOT_EQUAL(taken.error().message.find(std::to_string(port)),
                      std::string::npos);
}

CAF_TEST(a port another socket only binds can still be listened on) {
  // As a port probe of another process (port_lease) holds a port for a
  // moment: bound with SO_REUSEADDR, not listening. Whichever of two such
  // sockets listens first has the port; the other's listen fails with
  // EADDRINUSE, which is port_unavailable as a failed bind is (a node
  // moves on to its next port).
  unique_fd probe{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  int on = 1;
  ::setsockopt(probe.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  auto any = loopback(0);
  CAF_REQUIRE_EQUAL(
    ::bind(probe.get(), reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  auto port = port_of(probe.get());
  auto addr = loopback(port);
  auto ours = listen_tcp(reinterpret_cast<sockaddr*>(&addr), sizeof(addr),
                         "127.0.0.1:" + std::to_string(port));
  SANDBOX_REQUIRE_OK(ours);
  CAF_CHECK_EQUAL(port_of(ours->get()), port);
  auto rc = ::listen(probe.get(), 1);
  auto err = errno;
  CAF_CHECK_NOT_EQUAL(rc, 0);
  CAF_CHECK_EQUAL(err, EADDRINUSE);
}

CAF_TEST_FIXTURE_SCOPE_END()
