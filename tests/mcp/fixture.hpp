#pragma once

// Tests of the MCP server's protocol layer (apps/mcp/server.hpp)
// against a fake tool provider: no node, no processes. The fixture feeds
// lines to a server and collects what it writes, with arrival times.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "mcp/server.hpp"

namespace sandbox::test {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

/// How long a test waits for something that must happen.
constexpr auto patience = std::chrono::seconds{10};

/// Tools whose behaviour the test steers:
/// - `echo` answers its arguments (text: their JSON; structured: {args});
///   a non-string `text` member is an `invalid_argument`;
/// - `fail` is a tool failure (`is_error`);
/// - `broken` returns a non-argument error (`io_error`);
/// - `slow` prints `lines` lines ("line 1\n"...), then waits until the
///   test releases it or the server cancels it; with `gate: true` it first
///   waits for `open_gate()` before its cancel key counts (a command that
///   has not started yet).
class fake_tools : public mcp::tool_provider {
public:
  std::vector<actors::tool> tools() override {
    auto obj = [](json props) {
      return json{{"type", "object"}, {"properties", std::move(props)}};
    };
    auto make = [](std::string name, std::string description, json schema) {
      actors::tool t;
      t.name = std::move(name);
      t.description = std::move(description);
      t.input_schema = std::move(schema);
      return t;
    };
    auto echo = make("echo", "Answers its arguments.",
                     obj({{"text", {{"type", "string"}}}}));
    echo.title = "Echo";
    echo.annotations = {{"readOnlyHint", true}};
    echo.output_schema = obj({{"args", {{"type", "object"}}}});
    return {echo, make("fail", "Always fails.", obj(json::object())),
            make("broken", "Breaks.", obj(json::object())),
            make("slow", "Runs until released.",
                 obj({{"lines", {{"type", "integer"}}},
                      {"gate", {{"type", "boolean"}}}}))};
  }

  result<actors::tool_result>
  call(const std::string& name, const json& arguments,
       const actors::tool_call_context& ctx) override {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      called_.push_back(name);
      keys_.push_back(ctx.cancel_key);
    }
    cv_.notify_all();
    if (name == "echo") {
      if (arguments.contains("text") && !arguments["text"].is_string())
        return error{errc::invalid_argument, "echo: text must be a string"};
      return actors::tool_result{
        arguments.dump(), {{"args", arguments}}, false};
    }
    if (name == "fail")
      return actors::tool_result{"it failed", json::object(), true};
    if (name == "broken")
      return error{errc::io_error, "disk on fire"};
    if (name != "slow")
      return error{errc::invalid_argument, "unknown tool " + name};
    std::unique_lock<std::mutex> lk{mtx_};
    if (arguments.value("gate", false)) {
      gated_ += 1;
      cv_.notify_all();
      cv_.wait(lk, [this] { return gate_open_; });
    }
    live_.insert(ctx.cancel_key);
    lk.unlock();
    auto lines = arguments.value("lines", 0);
    for (int i = 1; i <= lines; ++i)
      if (ctx.on_output)
        ctx.on_output(
          output_chunk{stream_kind::out, "line " + std::to_string(i) + "\n"});
    lk.lock();
    started_ += 1;
    cv_.notify_all();
    cv_.wait(lk,
             [&] { return released_ || cancelled_.count(ctx.cancel_key) > 0; });
    live_.erase(ctx.cancel_key);
    bool cancelled = cancelled_.count(ctx.cancel_key) > 0;
    finished_ += 1;
    cv_.notify_all();
    return actors::tool_result{
      cancelled ? "cancelled" : "done", {{"cancelled", cancelled}}, false};
  }

  void cancel(const std::string& key) override {
    std::lock_guard<std::mutex> guard{mtx_};
    cancel_calls_ += 1;
    // As a session: only a running command can be cancelled.
    if (live_.count(key) > 0)
      cancelled_.insert(key);
    cv_.notify_all();
  }

  /// Ends every `slow` call, now and later.
  void release() {
    std::lock_guard<std::mutex> guard{mtx_};
    released_ = true;
    cv_.notify_all();
  }

  void open_gate() {
    std::lock_guard<std::mutex> guard{mtx_};
    gate_open_ = true;
    cv_.notify_all();
  }

  /// Waits until `n` slow calls run (or waited at the gate, with `gated`).
  bool wait_started(int n, bool gated = false) {
    std::unique_lock<std::mutex> lk{mtx_};
    return cv_.wait_for(lk, patience,
                        [&] { return (gated ? gated_ : started_) >= n; });
  }

  /// Waits until `n` slow calls returned.
  bool wait_finished(int n) {
    std::unique_lock<std::mutex> lk{mtx_};
    return cv_.wait_for(lk, patience, [&] { return finished_ >= n; });
  }

  size_t cancelled_count() {
    std::lock_guard<std::mutex> guard{mtx_};
    return cancelled_.size();
  }

  std::vector<std::string> called() {
    std::lock_guard<std::mutex> guard{mtx_};
    return called_;
  }

  /// The cancel key of each call, in the order of `called`.
  std::vector<std::string> keys() {
    std::lock_guard<std::mutex> guard{mtx_};
    return keys_;
  }

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  std::vector<std::string> called_;
  std::vector<std::string> keys_;
  std::set<std::string> live_;
  std::set<std::string> cancelled_;
  int started_ = 0;
  int gated_ = 0;
  int finished_ = 0;
  int cancel_calls_ = 0;
  bool released_ = false;
  bool gate_open_ = false;
};

/// What the server wrote, line by line, with arrival times.
class collector {
public:
  mcp::server::writer writer() {
    return [this](const std::string& line) {
      std::lock_guard<std::mutex> guard{mtx_};
      lines_.push_back({line, clock_type::now()});
      cv_.notify_all();
    };
  }

  /// The next line as JSON (null when none came in time: the test fails).
  json next(clock_type::time_point* when = nullptr) {
    std::unique_lock<std::mutex> lk{mtx_};
    if (!cv_.wait_for(lk, patience, [this] { return !lines_.empty(); }))
      return json{};
    auto [line, at] = lines_.front();
    lines_.pop_front();
    if (when != nullptr)
      *when = at;
    raw_ = line;
    return json::parse(line);
  }

  /// The text of the last line `next` returned.
  const std::string& raw() const {
    return raw_;
  }

  /// Lines written and not taken yet.
  size_t waiting() {
    std::lock_guard<std::mutex> guard{mtx_};
    return lines_.size();
  }

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, clock_type::time_point>> lines_;
  std::string raw_;
};

struct fixture {
  fake_tools tools;
  collector out;
  std::unique_ptr<mcp::server> srv;

  explicit fixture(mcp::server_config cfg = {}) {
    spdlog::set_level(spdlog::level::warn);
    cfg.version = "9.9.9";
    srv = std::make_unique<mcp::server>(tools, out.writer(), cfg);
  }

  ~fixture() {
    tools.release();
    tools.open_gate();
    srv->shutdown();
  }

  void send(const json& msg) {
    srv->receive(msg.dump());
  }

  void send_raw(const std::string& line) {
    srv->receive(line);
  }

  /// initialize with `version`; returns the result.
  json initialize(const std::string& version = "2025-06-18") {
    send({{"jsonrpc", "2.0"},
          {"id", 0},
          {"method", "initialize"},
          {"params",
           {{"protocolVersion", version},
            {"capabilities", json::object()},
            {"clientInfo", {{"name", "test"}, {"version", "1"}}}}}});
    auto r = out.next();
    send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    return r;
  }

  json request(const json& id, const std::string& method,
               json params = nullptr) {
    json msg{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
    if (!params.is_null())
      msg["params"] = std::move(params);
    return msg;
  }

  json call(const json& id, const std::string& tool, json arguments,
            json progress_token = nullptr) {
    json params{{"name", tool}, {"arguments", std::move(arguments)}};
    if (!progress_token.is_null())
      params["_meta"] = {{"progressToken", progress_token}};
    return request(id, "tools/call", std::move(params));
  }

  json cancelled(const json& id) {
    return {{"jsonrpc", "2.0"},
            {"method", "notifications/cancelled"},
            {"params", {{"requestId", id}, {"reason", "test"}}}};
  }

  /// Sends a ping and returns the next line: proves that nothing was
  /// written between (the server answers a ping at once).
  json ping(const json& id = "ping") {
    send(request(id, "ping"));
    return out.next();
  }
};

inline int error_code(const json& response) {
  if (!response.is_object() || !response.contains("error"))
    return 0;
  return response["error"].value("code", 0);
}

} // namespace sandbox::test
