// Scenario 14: the HTTP door of a node (`sandbox serve --http`) against
// the embedded node, in the same run and the same process: exec `true`
// over HTTP at concurrency 8 (one keep-alive connection per worker), 256
// MiB of output streamed as NDJSON, and the memory of 1,000 idle HTTP
// connections. The HTTP server runs on the embedded node's own reactor,
// as in `serve`; the clients are Beast's synchronous ones.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench.hpp"
#include "http/server.hpp"
#include "load_driver.hpp"

namespace sandbox::bench {

namespace {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

constexpr uint64_t stream_bytes = uint64_t{256} << 20;

/// Printable bytes, so that their JSON is as long as they are.
std::string stream_command() {
  return fmt::format("head -c {} /dev/zero | tr '\\0' a", stream_bytes);
}

/// One keep-alive HTTP connection to the node.
struct http_client {
  net::io_context ctx;
  beast::tcp_stream stream{ctx};
  beast::flat_buffer buf;
  std::string token;
  /// NDJSON lines of the last stream.
  uint64_t lines = 0;

  http_client(uint16_t port, std::string t) : token(std::move(t)) {
    stream.connect(tcp::endpoint{net::ip::make_address("127.0.0.1"), port});
  }

  bhttp::request<bhttp::string_body> post(const std::string& target,
                                          const std::string& body) {
    bhttp::request<bhttp::string_body> req{bhttp::verb::post, target, 11};
    req.set(bhttp::field::host, "127.0.0.1");
    req.set(bhttp::field::authorization, "Bearer " + token);
    req.set(bhttp::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    return req;
  }

  /// One JSON request and its answer.
  bool exec_true(const std::string& session) {
    auto req = post("/v1/sessions/" + session + "/exec",
                    R"({"command":"true"})");
    bhttp::write(stream, req);
    bhttp::response<bhttp::string_body> res;
    bhttp::read(stream, buf, res);
    return res.result() == bhttp::status::ok
           && res.body().find("\"exit_code\":0") != std::string::npos;
  }

  /// Streams `command`'s output as NDJSON; returns the body's bytes (0 when
  /// it did not end with a result line of exit code 0).
  uint64_t stream_ndjson(const std::string& session,
                         const std::string& command) {
    auto req = post("/v1/sessions/" + session + "/exec",
                    nlohmann::json{{"command", command}}.dump());
    req.set(bhttp::field::accept, "application/x-ndjson");
    bhttp::write(stream, req);
    bhttp::response_parser<bhttp::buffer_body> p;
    p.body_limit(boost::none);
    bhttp::read_header(stream, buf, p);
    std::vector<char> piece(1 << 20);
    std::string tail;
    uint64_t total = 0;
    lines = 0;
    while (!p.is_done()) {
      p.get().body().data = piece.data();
      p.get().body().size = piece.size();
      beast::error_code ec;
      bhttp::read(stream, buf, p, ec);
      if (ec == bhttp::error::need_buffer)
        ec = {};
      if (ec)
        return 0;
      auto n = piece.size() - p.get().body().size;
      total += n;
      lines += static_cast<uint64_t>(
        std::count(piece.data(), piece.data() + n, '\n'));
      tail.append(piece.data(), n);
      if (tail.size() > 4096)
        tail.erase(0, tail.size() - 4096);
    }
    return tail.find("\"type\":\"result\",\"exit_code\":0") != std::string::npos
             ? total
             : 0;
  }
};

std::string read_token(const std::string& path) {
  std::ifstream in{path};
  std::string t;
  in >> t;
  return t;
}

/// A session made over HTTP (so that its identity may use it).
std::string http_session(http_client& c) {
  auto req = c.post("/v1/sessions", "{}");
  bhttp::write(c.stream, req);
  bhttp::response<bhttp::string_body> res;
  bhttp::read(c.stream, c.buf, res);
  auto at = res.body().find("\"id\":\"");
  if (res.result() != bhttp::status::created || at == std::string::npos)
    throw std::runtime_error("POST /v1/sessions: " + res.body());
  return res.body().substr(at + 6, res.body().find('"', at + 6) - at - 6);
}

} // namespace

std::vector<row> run_http(const options& opt) {
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  actors::embedded_node node{node_config(opt)};
  http::server_config cfg;
  cfg.generated_token_file = opt.scratch + "/http.token";
  auto started = http::server::start(node.system(), node.node(),
                                     node.rt()->reactor().context(), cfg);
  if (!started)
    throw std::runtime_error(started.error().message);
  auto& server = **started;
  auto token = read_token(cfg.generated_token_file);
  auto port = server.port();
  std::vector<row> rows;

  // exec `true` at concurrency 8: embedded sessions, then HTTP ones.
  std::vector<actors::blocking_session> sessions;
  for (size_t i = 0; i < 8; ++i)
    sessions.push_back(make_session(node, opt, fmt::format("http/e{}", i)));
  auto embedded_once = [&](size_t w) {
    auto r = sessions[w].execute("true");
    return r && r->exit_code == 0;
  };
  drive(8, opt.quick ? 0.1 : 0.3, false, embedded_once);
  auto embedded = drive(8, opt.phase_seconds, false, embedded_once);
  std::vector<std::unique_ptr<http_client>> clients;
  std::vector<std::string> ids;
  for (size_t i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<http_client>(port, token));
    ids.push_back(http_session(*clients.back()));
  }
  auto http_once = [&](size_t w) { return clients[w]->exec_true(ids[w]); };
  drive(8, opt.quick ? 0.1 : 0.3, false, http_once);
  auto over_http = drive(8, opt.phase_seconds, false, http_once);
  row exec;
  exec.scenario = 14;
  exec.key = "http_exec_c8";
  exec.label = "HTTP exec `true`, concurrency 8";
  exec.unit = "exec/s";
  exec.ours = over_http.rate();
  exec.baseline = embedded.rate();
  exec.goal = ">= 0.7 x embedded";
  exec.result = judge(exec.ratio() >= 0.7 && over_http.errors == 0);
  exec.note = fmt::format("baseline: the embedded node, same run; {} HTTP "
                          "errors; one keep-alive connection per worker",
                          over_http.errors);
  rows.push_back(std::move(exec));

  // 256 MiB streamed, rounds alternating; the median round's ratio.
  std::vector<std::pair<double, std::string>> ratios;
  bool ok = true;
  std::vector<double> http_rates, embedded_rates;
  uint64_t chunk_lines = 0;
  const int rounds = opt.quick ? 3 : 5;
  for (int i = 0; i < rounds; ++i) {
    uint64_t seen = 0;
    auto start = clock::now();
    auto r = sessions[0].execute_streaming(stream_command(), {},
                                           [&](const output_chunk& x) {
                                             seen += x.data.size();
                                           });
    auto e_secs = seconds_since(start);
    ok = ok && r && r->exit_code == 0 && seen == stream_bytes;
    start = clock::now();
    auto body = clients[0]->stream_ndjson(ids[0], stream_command());
    chunk_lines = clients[0]->lines;
    auto h_secs = seconds_since(start);
    ok = ok && body >= stream_bytes;
    embedded_rates.push_back(static_cast<double>(stream_bytes) / e_secs);
    http_rates.push_back(static_cast<double>(stream_bytes) / h_secs);
  }
  std::vector<std::pair<double, size_t>> order;
  std::string each;
  for (size_t i = 0; i < http_rates.size(); ++i) {
    order.emplace_back(http_rates[i] / embedded_rates[i], i);
    each += fmt::format("{}{:.2f}", i == 0 ? "" : " ", order.back().first);
  }
  std::sort(order.begin(), order.end());
  auto mid = order[order.size() / 2].second;
  row stream;
  stream.scenario = 14;
  stream.key = "http_stream_256m";
  stream.label = "HTTP 256 MiB streamed output (NDJSON)";
  stream.unit = "MiB/s";
  stream.ours = http_rates[mid] / (1 << 20);
  stream.baseline = embedded_rates[mid] / (1 << 20);
  stream.goal = ">= 0.5 x embedded";
  stream.result = ok ? judge(stream.ratio() >= 0.5) : verdict::not_met;
  stream.note = ok ? fmt::format("median of {} rounds ({}); printable bytes "
                                 "(their JSON is as long as they are); {:.0f} "
                                 "KiB per chunk line",
                                 rounds, each,
                                 chunk_lines > 0
                                   ? static_cast<double>(stream_bytes) / 1024
                                       / static_cast<double>(chunk_lines)
                                   : 0.0)
                   : "a stream did not complete";
  rows.push_back(std::move(stream));
  clients.clear();

  // 1,000 idle connections, each having sent part of a request line.
  const size_t idle = opt.quick ? 200 : 1000;
  auto before = resident_bytes();
  std::vector<int> fds;
  for (size_t i = 0; i < idle; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("connect failed");
    (void) !::send(fd, "GET /v1/sess", 12, MSG_NOSIGNAL);
    fds.push_back(fd);
  }
  // Every connection is open (and has been read) once the server counts
  // them all.
  for (int i = 0; i < 5000 && server.connections() < idle; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  std::this_thread::sleep_for(std::chrono::milliseconds{200});
  auto after = resident_bytes();
  row mem;
  mem.scenario = 14;
  mem.key = "http_idle_connections";
  mem.label = fmt::format("{} idle HTTP connections", idle);
  mem.unit = "MiB";
  mem.ours = static_cast<double>(after > before ? after - before : 0)
             / (1 << 20);
  mem.goal = "<= 64 MiB for 1,000";
  mem.result = judge(mem.ours * 1000.0 / static_cast<double>(idle) <= 64.0
                     && server.connections() >= idle);
  mem.note = fmt::format("growth of this process's RSS (the node's); {:.1f} "
                         "KiB per connection; {} open",
                         mem.ours * 1024 / static_cast<double>(idle),
                         server.connections());
  rows.push_back(std::move(mem));
  for (int fd : fds)
    ::close(fd);
  for (auto& s : sessions)
    (void) s.stop();
  return rows;
}

} // namespace sandbox::bench
