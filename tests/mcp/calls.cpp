#define CAF_SUITE mcp.calls
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <thread>

#include "fixture.hpp"

using namespace sandbox::test;
namespace mcp = sandbox::mcp;
using std::chrono::milliseconds;

namespace {

/// Takes progress notifications until the response of `id`; returns them
/// with their arrival times.
std::vector<std::pair<json, clock_type::time_point>>
progress_until_response(fixture& f, const json& id, json* response) {
  std::vector<std::pair<json, clock_type::time_point>> out;
  for (;;) {
    clock_type::time_point at;
    auto msg = f.out.next(&at);
    if (msg.is_null() || msg.contains("id")) {
      *response = msg;
      CAF_CHECK_EQUAL(msg["id"], id);
      return out;
    }
    CAF_CHECK_EQUAL(msg["method"], "notifications/progress");
    out.emplace_back(msg, at);
  }
}

} // namespace

CAF_TEST(a call with a progress token reports at least once a second) {
  fixture f;
  f.initialize();
  auto start = clock_type::now();
  f.send(f.call(1, "slow", {{"lines", 3}}, "tok-1"));
  CAF_REQUIRE(f.tools.wait_started(1));
  // Three notifications while the call runs, without new output between
  // them: each comes within a second of the one before.
  std::vector<clock_type::time_point> times{start};
  for (int i = 1; i <= 3; ++i) {
    clock_type::time_point at;
    auto p = f.out.next(&at);
    CAF_REQUIRE_EQUAL(p["method"], "notifications/progress");
    CAF_CHECK(!p.contains("id"));
    CAF_CHECK_EQUAL(p["params"]["progressToken"], "tok-1");
    CAF_CHECK_EQUAL(p["params"]["progress"], i);
    // The first tick may come before the output.
    if (i == 3)
      CAF_CHECK_EQUAL(p["params"]["message"], "line 1\nline 2\nline 3");
    times.push_back(at);
  }
  for (size_t i = 1; i < times.size(); ++i)
    CAF_CHECK_LESS(times[i] - times[i - 1], milliseconds{1000});
  f.tools.release();
  json response;
  auto more = progress_until_response(f, 1, &response);
  CAF_CHECK_EQUAL(response["result"]["content"][0]["text"], "done");
  // Nothing after the response.
  f.srv->shutdown();
  CAF_CHECK_EQUAL(f.out.waiting(), 0u);
}

CAF_TEST(
  progress tokens of both types are echoed and messages keep the last lines) {
  mcp::server_config cfg;
  cfg.progress_lines = 2;
  cfg.progress_interval = milliseconds{100};
  fixture f{cfg};
  f.initialize();
  f.send(f.call(1, "slow", {{"lines", 5}}, 77));
  CAF_REQUIRE(f.tools.wait_started(1));
  // The first tick may come before the output.
  json p;
  do
    p = f.out.next();
  while (p.is_object() && p["params"]["message"] == "running, no output yet");
  CAF_CHECK_EQUAL(p["params"]["progressToken"], 77);
  CAF_CHECK_EQUAL(p["params"]["message"], "line 4\nline 5");
}

CAF_TEST(progress without output says so) {
  mcp::server_config cfg;
  cfg.progress_interval = milliseconds{100};
  fixture f{cfg};
  f.initialize();
  f.send(f.call(1, "slow", json::object(), "t"));
  auto p = f.out.next();
  CAF_CHECK_EQUAL(p["params"]["message"], "running, no output yet");
}

CAF_TEST(progress notifications under 2024 - 11 - 05 carry no message) {
  mcp::server_config cfg;
  cfg.progress_interval = milliseconds{100};
  fixture f{cfg};
  f.initialize("2024-11-05");
  f.send(f.call(1, "slow", {{"lines", 1}}, "t"));
  auto p = f.out.next();
  CAF_CHECK_EQUAL(p["method"], "notifications/progress");
  CAF_CHECK(!p["params"].contains("message"));
}

CAF_TEST(a call without a progress token reports nothing) {
  mcp::server_config cfg;
  cfg.progress_interval = milliseconds{50};
  fixture f{cfg};
  f.initialize();
  f.send(f.call(1, "slow", {{"lines", 2}}));
  CAF_REQUIRE(f.tools.wait_started(1));
  // A second call with a token: its progress shows that ticks happen.
  f.send(f.call(2, "slow", json::object(), "t2"));
  CAF_REQUIRE(f.tools.wait_started(2));
  for (int i = 0; i < 3; ++i) {
    auto p = f.out.next();
    CAF_CHECK_EQUAL(p["params"]["progressToken"], "t2");
  }
  f.tools.release();
  std::set<std::string> answered;
  for (;;) {
    auto m = f.out.next();
    CAF_REQUIRE(!m.is_null());
    if (!m.contains("id")) {
      CAF_CHECK_EQUAL(m["params"]["progressToken"], "t2");
      continue;
    }
    answered.insert(m["id"].dump());
    if (answered.size() == 2)
      break;
  }
}

CAF_TEST(two servers never give their calls the same cancel key) {
  // Two MCP servers of one session (each its own process in use): a
  // key numbered from 1 in both would make the second's first call
  // refused by the session ("already used").
  fixture a;
  fixture b;
  for (auto* f : {&a, &b}) {
    f->initialize();
    for (int id = 1; id <= 2; ++id) {
      f->send(f->call(id, "echo", {{"text", "x"}}));
      CAF_CHECK_EQUAL(f->out.next()["id"], id);
    }
  }
  auto keys = a.tools.keys();
  auto more = b.tools.keys();
  keys.insert(keys.end(), more.begin(), more.end());
  CAF_REQUIRE_EQUAL(keys.size(), 4u);
  std::set<std::string> distinct{keys.begin(), keys.end()};
  CAF_CHECK_EQUAL(distinct.size(), 4u);
  for (auto& k : keys)
    CAF_CHECK_EQUAL(k.compare(0, 4, "mcp-"), 0);
}

CAF_TEST(a cancelled call ends its command and answers nothing) {
  fixture f;
  f.initialize();
  f.send(f.call(7, "slow", {{"lines", 1}}));
  CAF_REQUIRE(f.tools.wait_started(1));
  f.send(f.cancelled(7));
  CAF_REQUIRE(f.tools.wait_finished(1));
  CAF_CHECK_EQUAL(f.tools.cancelled_count(), 1u);
  // The server still serves; the call's worker is done with it.
  CAF_CHECK_EQUAL(f.ping("p")["id"], "p");
  f.srv->shutdown();
  CAF_CHECK_EQUAL(f.out.waiting(), 0u);
}

CAF_TEST(a cancellation that comes before the command started still ends it) {
  fixture f;
  f.initialize();
  f.send(f.call("g", "slow", {{"gate", true}}));
  CAF_REQUIRE(f.tools.wait_started(1, true));
  // The command is not running yet: this first cancel finds nothing.
  f.send(f.cancelled("g"));
  f.tools.open_gate();
  // The server repeats the cancellation until the call has ended.
  CAF_REQUIRE(f.tools.wait_finished(1));
  CAF_CHECK_EQUAL(f.tools.cancelled_count(), 1u);
  CAF_CHECK_EQUAL(f.ping("p")["id"], "p");
}

CAF_TEST(a call that waits for a worker can be cancelled) {
  mcp::server_config cfg;
  cfg.workers = 1;
  fixture f{cfg};
  f.initialize();
  f.send(f.call(1, "slow", json::object()));
  CAF_REQUIRE(f.tools.wait_started(1));
  f.send(f.call(2, "echo", {{"text", "queued"}}));
  CAF_CHECK_EQUAL(f.srv->calls_in_flight(), 2u);
  f.send(f.cancelled(2));
  CAF_CHECK_EQUAL(f.srv->calls_in_flight(), 1u);
  f.tools.release();
  auto r = f.out.next();
  CAF_CHECK_EQUAL(r["id"], 1);
  f.srv->shutdown();
  CAF_CHECK_EQUAL(f.out.waiting(), 0u);
  CAF_CHECK_EQUAL(f.tools.called(), std::vector<std::string>{"slow"});
}

CAF_TEST(several calls run at once and a quick one answers first) {
  fixture f;
  f.initialize();
  for (int i = 1; i <= 3; ++i)
    f.send(f.call(i, "slow", json::object()));
  CAF_REQUIRE(f.tools.wait_started(3));
  f.send(f.call(4, "echo", {{"text", "quick"}}));
  CAF_CHECK_EQUAL(f.out.next()["id"], 4);
  f.tools.release();
  std::set<int> ids;
  for (int i = 0; i < 3; ++i)
    ids.insert(f.out.next()["id"].get<int>());
  CAF_CHECK_EQUAL(ids, (std::set<int>{1, 2, 3}));
}

CAF_TEST(shutdown cancels running and waiting calls) {
  mcp::server_config cfg;
  cfg.workers = 2;
  fixture f{cfg};
  f.initialize();
  for (int i = 1; i <= 3; ++i)
    f.send(f.call(i, "slow", json::object()));
  CAF_REQUIRE(f.tools.wait_started(2));
  CAF_CHECK_EQUAL(f.srv->calls_in_flight(), 3u);
  // It says how many it cancelled (serve_lines logs that at end of input).
  CAF_CHECK_EQUAL(f.srv->shutdown(), 3u);
  CAF_CHECK_EQUAL(f.srv->shutdown(), 0u);
  CAF_CHECK_EQUAL(f.srv->calls_in_flight(), 0u);
  CAF_CHECK_EQUAL(f.tools.cancelled_count(), 2u);
  CAF_CHECK_EQUAL(f.out.waiting(), 0u);
  // Lines after the shutdown are ignored.
  f.send(f.request(9, "ping"));
  CAF_CHECK_EQUAL(f.out.waiting(), 0u);
}

namespace {

struct pipe_pair {
  int fds[2] = {-1, -1};
  pipe_pair() {
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe2");
  }
  ~pipe_pair() {
    close_write();
    if (fds[0] >= 0)
      ::close(fds[0]);
  }
  void write(const std::string& s) {
    CAF_REQUIRE_EQUAL(::write(fds[1], s.data(), s.size()),
                      static_cast<ssize_t>(s.size()));
  }
  void close_write() {
    if (fds[1] >= 0)
      ::close(fds[1]);
    fds[1] = -1;
  }
};

} // namespace

CAF_TEST(serve lines reads messages until the input ends) {
  fixture f;
  pipe_pair in;
  in.write(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"
           "\n\n"
           R"({"jsonrpc":"2.0","id":2,"method":"ping"})"
           "\r\n"
           R"({"jsonrpc":"2.0","id":3,"method":"ping"})");
  in.close_write();
  auto r = mcp::serve_lines(*f.srv, in.fds[0], -1);
  CAF_CHECK(r.has_value());
  // The last line had no newline: it counts all the same.
  for (int i = 1; i <= 3; ++i)
    CAF_CHECK_EQUAL(f.out.next()["id"], i);
}

CAF_TEST(serve lines answers an overlong line with a parse error) {
  fixture f;
  pipe_pair in;
  std::thread writer{[&] {
    in.write(R"({"jsonrpc":"2.0","id":"long","method":")"
             + std::string(3000, 'x') + "\"}\n"
             + R"({"jsonrpc":"2.0","id":2,"method":"ping"})" + "\n");
    in.close_write();
  }};
  auto r = mcp::serve_lines(*f.srv, in.fds[0], -1, 1024);
  writer.join();
  CAF_CHECK(r.has_value());
  auto e = f.out.next();
  CAF_CHECK_EQUAL(error_code(e), mcp::parse_error);
  CAF_CHECK(e["id"].is_null());
  CAF_CHECK_EQUAL(f.out.next()["id"], 2);
  CAF_CHECK_EQUAL(f.out.waiting(), 0u);
}

CAF_TEST(serve lines ends when woken and cancels the running calls) {
  fixture f;
  f.initialize();
  pipe_pair in;
  pipe_pair wake;
  in.write(f.call(1, "slow", json::object()).dump() + "\n");
  std::thread loop{
    [&] { (void) mcp::serve_lines(*f.srv, in.fds[0], wake.fds[0]); }};
  CAF_REQUIRE(f.tools.wait_started(1));
  wake.write("x");
  loop.join();
  CAF_CHECK_EQUAL(f.srv->calls_in_flight(), 0u);
  CAF_CHECK_EQUAL(f.tools.cancelled_count(), 1u);
  CAF_CHECK_EQUAL(f.out.waiting(), 0u);
}
