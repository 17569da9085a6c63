// http.door: what the HTTP door bounds (docs/http.md, "Limits"): header
// size, connections, slow and idle clients, memory per idle connection,
// and random garbage, after which the node still serves a well-formed
// request.

#define CAF_SUITE http.door
#include "caf/test/dsl.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <random>

#include "helpers/check.hpp"
#include "http_fixture.hpp"

using namespace sandbox::test;

namespace {

/// The port of `n`'s HTTP listener.
int port_of(const http_node& n) {
  return std::atoi(n.base.substr(n.base.rfind(':') + 1).c_str());
}

/// A TCP connection to the node, closed by its destructor.
struct raw_connection {
  int fd = -1;

  explicit raw_connection(int port) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("connect failed");
  }

  ~raw_connection() {
    if (fd >= 0)
      ::close(fd);
  }

  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  void send(const std::string& bytes) {
    (void) !::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }

  /// Everything the node sends until it closes (or 30 s of silence).
  std::string read_to_end() {
    std::string out;
    char buf[4096];
    for (;;) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 30000) <= 0)
        return out + "<silent 30 s>";
      auto n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0)
        return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
};

/// The node's resident memory in KiB.
long rss_kb(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::atol(line.c_str() + 6);
  return -1;
}

std::string well_formed(const http_node& n) {
  return "GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
         "Bearer "
         + n.token + "\r\nConnection: close\r\n\r\n";
}

} // namespace

CAF_TEST(a header over the limit is answered 431) {
  http_node n{{"--http-max-header", "4096"}};
  raw_connection c{port_of(n)};
  c.send("GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
         + std::string(8192, 'a') + "\r\n\r\n");
  auto answer = c.read_to_end();
  CAF_CHECK_EQUAL(answer.substr(0, 12), "HTTP/1.1 431");
  CAF_CHECK(answer.find("header_too_large") != std::string::npos);
  CAF_CHECK_EQUAL(n.get("/v1/sessions").status, 200);
}

CAF_TEST(connections beyond the cap are answered 503 and closed) {
  http_node n{{"--http-max-connections", "3"}};
  auto port = port_of(n);
  std::vector<std::unique_ptr<raw_connection>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<raw_connection>(port));
    // Each connection is known to the node once it answered on it.
    held.back()->send("GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Authorization: Bearer "
                      + n.token + "\r\n\r\n");
    char buf[12];
    CAF_REQUIRE_EQUAL(::recv(held.back()->fd, buf, sizeof buf, MSG_WAITALL),
                      12);
  }
  raw_connection extra{port};
  auto answer = extra.read_to_end();
  CAF_CHECK_EQUAL(answer.substr(0, 12), "HTTP/1.1 503");
  CAF_CHECK(answer.find("\"code\":\"limit\"") != std::string::npos);
  held.clear();
  // Once they are gone, a new client is served (after the node noticed).
  bool served = false;
  for (int i = 0; i < 1500 && !served; ++i) {
    raw_connection again{port};
    again.send(well_formed(n));
    served = again.read_to_end().substr(0, 12) == "HTTP/1.1 200";
  }
  CAF_CHECK(served);
}

CAF_TEST(slow headers and idle connections are dropped) {
  http_node n{{"--http-header-timeout", "1", "--http-idle-timeout", "1"}};
  raw_connection slow{port_of(n)};
  slow.send("GET /v1/sessions HTTP/1.1\r\nHost:");
  // The node closes it without an answer once its header time is up.
  CAF_CHECK_EQUAL(slow.read_to_end(), "");
  raw_connection idle{port_of(n)};
  idle.send(
    "GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
    + n.token + "\r\n\r\n");
  auto answer = idle.read_to_end();
  CAF_CHECK_EQUAL(answer.substr(0, 12), "HTTP/1.1 200");
  CAF_CHECK(answer.find("<silent") == std::string::npos);
}

CAF_TEST(idle connections cost little memory) {
  SANDBOX_SKIP_MEMORY_TEST_IF_SANITIZED();
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  constexpr int count = 500;
  http_node n;
  auto port = port_of(n);
  // Warm: the node's first connection makes what every later one shares.
  CAF_CHECK_EQUAL(n.get("/v1/sessions").status, 200);
  auto before = rss_kb(n.node->pid);
  std::vector<std::unique_ptr<raw_connection>> held;
  for (int i = 0; i < count; ++i) {
    held.push_back(std::make_unique<raw_connection>(port));
    held.back()->send("GET /v1/sess");
  }
  // Every connection has been read by the node once it answers one more.
  CAF_CHECK_EQUAL(n.get("/v1/sessions").status, 200);
  auto after = rss_kb(n.node->pid);
  auto per_connection = (after - before) * 1024 / count;
  CAF_MESSAGE("node RSS " << before << " KiB, with " << count
                          << " idle connections " << after
                          << " KiB: " << per_connection << " bytes each");
  // 64 MiB for 1,000 connections is 64 KiB each.
  SANDBOX_CHECK_MEMORY_BOUND(per_connection, 64 * 1024);
}

CAF_TEST(random garbage never stops the node from serving) {
  http_node n;
  auto port = port_of(n);
  auto seconds = std::getenv("SANDBOX_FUZZ_SECONDS") != nullptr
                   ? std::atoi(std::getenv("SANDBOX_FUZZ_SECONDS"))
                   : 5;
  auto seed = std::random_device{}();
  CAF_MESSAGE("seed " << seed);
  std::mt19937 rng{seed};
  auto pick = [&](const std::vector<std::string>& xs) {
    return xs[rng() % xs.size()];
  };
  auto noise = [&](size_t max) {
    std::string s(rng() % (max + 1), '\0');
    for (auto& c : s)
      c = static_cast<char>(rng());
    return s;
  };
  const std::vector<std::string> methods{"GET",  "POST", "PUT", "DELETE",
                                         "HEAD", "BREW", "",    "G\x01T"};
  const std::vector<std::string> targets{"/v1/sessions",
                                         "/v1/sessions/x/exec",
                                         "/mcp",
                                         "/",
                                         "*",
                                         "/v1/%zz",
                                         "/v1/sessions/../../etc/passwd",
                                         "/v1/sessions/"
                                           + std::string(300, 'a')};
  auto start_rss = rss_kb(n.node->pid);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{seconds};
  int rounds = 0;
  while (std::chrono::steady_clock::now() < until) {
    ++rounds;
    raw_connection c{port};
    std::string req;
    switch (rng() % 4) {
      case 0:
        req = noise(2048);
        break;
      case 1:
        req = pick(methods) + " " + pick(targets) + " HTTP/1.1\r\n" + noise(64)
              + "\r\n\r\n";
        break;
      case 2: {
        auto body = rng() % 2 ? noise(512) : std::string{"{\"command\":"};
        req = pick(methods) + " " + pick(targets)
              + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
              + n.token
              + "\r\nContent-Type: application/json\r\nContent-Length: "
              + std::to_string(body.size() + rng() % 3) + "\r\n\r\n" + body;
        break;
      }
      default:
        req = "POST /v1/sessions HTTP/1.1\r\nHost: "
              "127.0.0.1\r\nTransfer-Encoding: "
              "chunked\r\nAuthorization: Bearer "
              + n.token + "\r\n\r\n" + noise(64);
    }
    c.send(req);
    ::shutdown(c.fd, SHUT_WR);
    auto answer = c.read_to_end();
    // An answer, when there is one, is HTTP; and the node never goes silent.
    CHECK_THAT(answer.empty() || answer.rfind("HTTP/1.1 ", 0) == 0,
               "not HTTP: " << answer.substr(0, 80));
    CHECK_THAT(answer.find("<silent") == std::string::npos,
               "the node went silent after " << req.substr(0, 80));
  }
  CAF_MESSAGE(rounds << " rounds");
  raw_connection good{port};
  good.send(well_formed(n));
  CAF_CHECK_EQUAL(good.read_to_end().substr(0, 12), "HTTP/1.1 200");
  auto end_rss = rss_kb(n.node->pid);
  CAF_MESSAGE("node RSS " << start_rss << " KiB before, " << end_rss
                          << " KiB after");
  SANDBOX_CHECK_MEMORY_BOUND(end_rss - start_rss, 64 * 1024);
}
