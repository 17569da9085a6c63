#include "mcp/server.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace sandbox::mcp {

const std::vector<std::string> protocol_versions{"2025-06-18", "2025-03-26",
                                                 "2024-11-05"};

tool_provider::~tool_provider() = default;

namespace {

// Members in the order they are built: "jsonrpc", "id", then the rest.
using json = nlohmann::ordered_json;

/// The only version whose transport takes JSON-RPC batches: 2025-06-18
/// removed them, 2024-11-05 never had them.
constexpr const char* batch_version = "2025-03-26";

/// The output of a call kept for its progress messages.
constexpr size_t tail_bytes = 8 * 1024;

/// How often the server repeats the cancellation of a call that has not
/// ended yet (its command may not have been started when it was asked).
constexpr std::chrono::milliseconds cancel_retry{200};

std::string dump(const json& j) {
  // Tool output may hold invalid UTF-8: such bytes become U+FFFD.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_response(const json& id, int code, std::string message) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"error", {{"code", code}, {"message", std::move(message)}}}};
}

json result_response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

/// MCP: "Requests MUST include a string or integer ID", never null.
bool valid_id(const json& id) {
  return id.is_string() || id.is_number_integer();
}

/// A short form of `j` for messages.
std::string brief(const json& j) {
  auto text = dump(j);
  if (text.size() > 80)
    text = text.substr(0, 77) + "...";
  return text;
}

/// What a message is, for the debug log: its method, id and size, never
/// its contents (tool results carry command output, calls carry file
/// contents).
std::string outline(const json& msg, size_t bytes) {
  if (msg.is_array())
    return fmt::format("batch of {} ({} bytes)", msg.size(), bytes);
  std::string out;
  if (msg.is_object()) {
    if (auto m = msg.find("method"); m != msg.end() && m->is_string())
      out += m->get<std::string>() + " ";
    if (auto i = msg.find("id"); i != msg.end())
      out += "id " + brief(*i) + " ";
    if (msg.contains("error"))
      out += "error ";
  }
  return fmt::format("{}({} bytes)", out, bytes);
}

/// The responses of one batch, written as one array once every member is
/// done (an array of nothing but notifications answers nothing).
struct batch {
  json responses = json::array();
  /// Members not done yet, plus one while the batch is being read.
  size_t outstanding = 1;
};

using batch_ptr = std::shared_ptr<batch>;

/// One tools/call, waiting for a worker or running.
struct call {
  json id;
  std::string key;
  std::string name;
  json arguments;
  /// Null: the client asked for no progress.
  json progress_token;
  batch_ptr in_batch;
  bool running = false;
  bool cancelled = false;
  uint64_t progress = 0;
  /// The latest output (guarded by `out_mtx`: the worker appends, the
  /// ticker reads).
  std::mutex out_mtx;
  std::string tail;
};

using call_ptr = std::shared_ptr<call>;

/// The last `n` lines of `text` (a last line without its newline counts).
std::string last_lines(std::string_view text, size_t n) {
  if (!text.empty() && text.back() == '\n')
    text.remove_suffix(1);
  auto pos = text.size();
  for (size_t i = 0; i < n && pos != std::string_view::npos; ++i)
    pos = pos == 0 ? std::string_view::npos : text.rfind('\n', pos - 1);
  return std::string{pos == std::string_view::npos ? text
                                                   : text.substr(pos + 1)};
}

std::string type_name(const json& j) {
  if (j.is_number_float())
    return "a non-integer number";
  if (j.is_number())
    return "a number";
  return std::string{"a"} + (j.is_object() || j.is_array() ? "n " : " ")
         + j.type_name();
}

} // namespace

struct server::impl {
  impl(tool_provider& t, writer w, server_config c)
    : tools(t), write(std::move(w)), cfg(std::move(c)) {
    if (cfg.workers == 0)
      cfg.workers = 1;
    ticker = std::thread{[this] { tick(); }};
  }

  tool_provider& tools;
  writer write;
  server_config cfg;

  std::mutex write_mtx;
  mutable std::mutex mtx;
  std::condition_variable work_cv;
  std::condition_variable tick_cv;
  std::condition_variable done_cv;
  std::string version;
  bool stopping = false;
  bool joined = false;
  /// Calls that wait or run, by their id's JSON text (1 and "1" differ).
  std::map<std::string, call_ptr> calls;
  std::deque<call_ptr> pending;
  std::vector<std::thread> workers;
  size_t idle = 0;
  uint64_t next_key = 0;
  std::thread ticker;
  std::optional<std::vector<actors::tool>> tool_list;

  // -- output -----------------------------------------------------------------

  void send(const json& msg) {
    auto line = dump(msg);
    spdlog::debug("mcp -> {}", outline(msg, line.size()));
    std::lock_guard<std::mutex> guard{write_mtx};
    write(line);
  }

  /// Delivers the answer of one message (nothing for a notification or a
  /// cancelled call): on its own line, or into its batch.
  void deliver(const batch_ptr& b, std::optional<json> response) {
    if (!b) {
      if (response)
        send(*response);
      return;
    }
    json out;
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (response)
        b->responses.push_back(std::move(*response));
      if (--b->outstanding > 0 || b->responses.empty())
        return;
      out = std::move(b->responses);
    }
    send(out);
  }

  std::string negotiated() const {
    std::lock_guard<std::mutex> guard{mtx};
    return version;
  }

  const std::vector<actors::tool>& tool_specs() {
    // Only the reader thread asks.
    if (!tool_list)
      tool_list = tools.tools();
    return *tool_list;
  }

  // -- input ------------------------------------------------------------------

  void receive(std::string_view line) {
    while (
      !line.empty()
      && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos)
      return; // blank lines carry nothing
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (stopping)
        return;
    }
    json msg;
    try {
      msg = json::parse(line);
      spdlog::debug("mcp <- {}", outline(msg, line.size()));
    } catch (const json::parse_error& e) {
      spdlog::warn("mcp: malformed message: {}", e.what());
      send(error_response(nullptr, parse_error,
                          fmt::format("Parse error: {}", e.what())));
      return;
    }
    if (!msg.is_array()) {
      handle(msg, nullptr);
      return;
    }
    auto v = negotiated();
    if (v != batch_version) {
      send(error_response(
        nullptr, invalid_request,
        fmt::format("Invalid Request: JSON-RPC batches are not supported "
                    "under protocol version {} (only under {})",
                    v.empty() ? "(none negotiated yet)" : v, batch_version)));
      return;
    }
    if (msg.empty()) {
      send(error_response(nullptr, invalid_request,
                          "Invalid Request: an empty batch"));
      return;
    }
    auto b = std::make_shared<batch>();
    for (auto& member : msg) {
      {
        std::lock_guard<std::mutex> guard{mtx};
        ++b->outstanding;
      }
      handle(member, b);
    }
    deliver(b, std::nullopt);
  }

  /// Handles one message; delivers its answer exactly once (now, or when
  /// its call is done).
  void handle(const json& msg, const batch_ptr& b) {
    if (!msg.is_object())
      return deliver(
        b, error_response(nullptr, invalid_request,
                          fmt::format("Invalid Request: a message must be a "
                                      "JSON object, got {}",
                                      type_name(msg))));
    json id = nullptr;
    auto has_id = msg.contains("id");
    if (has_id) {
      if (!valid_id(msg["id"]))
        return deliver(
          b, error_response(nullptr, invalid_request,
                            fmt::format("Invalid Request: id must be a string "
                                        "or an integer, got {}",
                                        brief(msg["id"]))));
      id = msg["id"];
    }
    auto jv = msg.find("jsonrpc");
    if (jv == msg.end() || *jv != "2.0")
      return deliver(b, error_response(id, invalid_request,
                                       "Invalid Request: jsonrpc must be "
                                       "\"2.0\""));
    auto m = msg.find("method");
    if (m == msg.end()) {
      if (has_id && (msg.contains("result") || msg.contains("error"))) {
        // A response: the server sends no requests, so nobody waits.
        spdlog::warn("mcp: ignoring a response to no request (id {})",
                     brief(id));
        return deliver(b, std::nullopt);
      }
      return deliver(b, error_response(id, invalid_request,
                                       "Invalid Request: method is missing"));
    }
    if (!m->is_string())
      return deliver(
        b, error_response(id, invalid_request,
                          fmt::format("Invalid Request: method must be a "
                                      "string, got {}",
                                      brief(*m))));
    json params = nullptr;
    if (auto p = msg.find("params"); p != msg.end()) {
      if (!p->is_object() && !p->is_array())
        return deliver(
          b, error_response(id, invalid_request,
                            fmt::format("Invalid Request: params must be an "
                                        "object or an array, got {}",
                                        brief(*p))));
      params = *p;
    }
    auto method = m->get<std::string>();
    if (!has_id) {
      notification(method, params);
      return deliver(b, std::nullopt);
    }
    request(id, method, params, b);
  }

  void notification(const std::string& method, const json& params) {
    if (method == "notifications/cancelled") {
      if (params.is_object() && params.contains("requestId")
          && valid_id(params["requestId"]))
        cancel(params["requestId"]);
      else
        spdlog::warn("mcp: notifications/cancelled without a valid "
                     "requestId: {}",
                     brief(params));
      return;
    }
    if (method == "notifications/initialized")
      return;
    // Unknown notifications (and requests sent as notifications) are
    // dropped: nobody waits for them.
    spdlog::info("mcp: ignoring notification {}", method);
  }

  void request(const json& id, const std::string& method, const json& params,
               const batch_ptr& b) {
    if (params.is_array())
      return deliver(
        b, error_response(id, invalid_params,
                          fmt::format("Invalid params: {} takes an object",
                                      method)));
    if (method == "initialize")
      return deliver(b, initialize(id, params));
    if (method == "ping")
      return deliver(b, result_response(id, json::object()));
    if (method == "tools/list") {
      json list = json::array();
      for (auto& t : tool_specs())
        list.push_back({{"name", t.name},
                        {"description", t.description},
                        {"inputSchema", json(t.input_schema)}});
      return deliver(b, result_response(id, {{"tools", std::move(list)}}));
    }
    if (method == "tools/call")
      return start_call(id, params, b);
    deliver(b, error_response(id, method_not_found,
                              fmt::format("Method not found: {}", method)));
  }

  json initialize(const json& id, const json& params) {
    if (!params.is_object() || !params.contains("protocolVersion")
        || !params["protocolVersion"].is_string())
      return error_response(id, invalid_params,
                            "Invalid params: initialize needs "
                            "params.protocolVersion (a string)");
    auto asked = params["protocolVersion"].get<std::string>();
    std::string chosen;
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (!version.empty())
        return error_response(
          id, invalid_request,
          fmt::format("Invalid Request: the session is initialized already "
                      "(protocol version {})",
                      version));
      auto known = std::find(protocol_versions.begin(), protocol_versions.end(),
                             asked)
                   != protocol_versions.end();
      version = known ? asked : protocol_versions.front();
      chosen = version;
    }
    spdlog::info("mcp: client asked for protocol {}, speaking {}", asked,
                 chosen);
    return result_response(
      id, {{"protocolVersion", chosen},
           {"capabilities", {{"tools", {{"listChanged", false}}}}},
           {"serverInfo", {{"name", cfg.name}, {"version", cfg.version}}}});
  }

  // -- tool calls -------------------------------------------------------------

  void start_call(const json& id, const json& params, const batch_ptr& b) {
    if (!params.is_object() || !params.contains("name")
        || !params["name"].is_string())
      return deliver(b, error_response(id, invalid_params,
                                       "Invalid params: tools/call needs "
                                       "params.name (a string)"));
    auto name = params["name"].get<std::string>();
    json arguments = json::object();
    if (auto a = params.find("arguments"); a != params.end() && !a->is_null()) {
      if (!a->is_object())
        return deliver(
          b, error_response(id, invalid_params,
                            fmt::format("Invalid params: arguments of tool "
                                        "{} must be an object, got {}",
                                        name, brief(*a))));
      arguments = *a;
    }
    auto& specs = tool_specs();
    if (std::none_of(specs.begin(), specs.end(),
                     [&](const actors::tool& t) { return t.name == name; })) {
      std::string known;
      for (auto& t : specs)
        known += (known.empty() ? "" : ", ") + t.name;
      return deliver(b,
                     error_response(id, invalid_params,
                                    fmt::format("Unknown tool: {} (tools: {})",
                                                brief(json(name)), known)));
    }
    auto c = std::make_shared<call>();
    c->id = id;
    c->name = std::move(name);
    c->arguments = std::move(arguments);
    c->in_batch = b;
    if (auto meta = params.find("_meta");
        meta != params.end() && meta->is_object()) {
      if (auto tok = meta->find("progressToken");
          tok != meta->end() && valid_id(*tok))
        c->progress_token = *tok;
    }
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (stopping)
        return; // no answer: the server is going away
      if (calls.emplace(dump(id), c).second) {
        c->key = fmt::format("mcp-{}", ++next_key);
        pending.push_back(c);
        if (pending.size() > idle && workers.size() < cfg.workers)
          workers.emplace_back([this] { work(); });
        work_cv.notify_one();
        return;
      }
    }
    deliver(b, error_response(id, invalid_request,
                              fmt::format("Invalid Request: id {} is in use "
                                          "by a call that has not answered "
                                          "yet",
                                          brief(id))));
  }

  void work() {
    std::unique_lock<std::mutex> lk{mtx};
    for (;;) {
      ++idle;
      work_cv.wait(lk, [this] { return stopping || !pending.empty(); });
      --idle;
      if (stopping)
        return;
      auto c = pending.front();
      pending.pop_front();
      c->running = true;
      lk.unlock();
      run(c);
      lk.lock();
    }
  }

  void run(const call_ptr& c) {
    actors::tool_call_context ctx;
    ctx.cancel_key = c->key;
    ctx.on_output = [c](const output_chunk& chunk) {
      std::lock_guard<std::mutex> guard{c->out_mtx};
      c->tail += chunk.data;
      if (c->tail.size() > tail_bytes)
        c->tail.erase(0, c->tail.size() - tail_bytes);
    };
    result<actors::tool_result> r = error{errc::io_error, "not run"};
    try {
      r = tools.call(c->name, nlohmann::json(c->arguments), ctx);
    } catch (const std::exception& e) {
      r = error{errc::io_error, e.what()};
    }
    json response;
    if (r) {
      json content = json::array();
      content.push_back({{"type", "text"}, {"text", r->text}});
      json res{{"content", std::move(content)}, {"isError", r->is_error}};
      // structuredContent exists since 2025-06-18.
      if (negotiated() == protocol_versions.front()
          && r->structured.is_object())
        res["structuredContent"] = json(r->structured);
      response = result_response(c->id, std::move(res));
    } else if (r.error().code == errc::invalid_argument) {
      response
        = error_response(c->id, invalid_params,
                         fmt::format("Invalid params: {}", r.error().message));
    } else {
      // Anything else went wrong in the tool: the model sees it.
      json content = json::array();
      content.push_back(
        {{"type", "text"},
         {"text", fmt::format("{}: {}", to_string(r.error().code),
                              r.error().message)}});
      response = result_response(c->id, {{"content", std::move(content)},
                                         {"isError", true}});
    }
    bool cancelled;
    {
      std::lock_guard<std::mutex> guard{mtx};
      calls.erase(dump(c->id));
      cancelled = c->cancelled;
    }
    done_cv.notify_all();
    if (cancelled) {
      spdlog::info("mcp: call {} cancelled", brief(c->id));
      deliver(c->in_batch, std::nullopt);
    } else {
      deliver(c->in_batch, std::move(response));
    }
  }

  void cancel(const json& request_id) {
    std::string key;
    batch_ptr dropped;
    bool was_pending = false;
    {
      std::lock_guard<std::mutex> guard{mtx};
      auto i = calls.find(dump(request_id));
      if (i == calls.end()) {
        // Done already, or never known: the spec says to ignore it.
        spdlog::info("mcp: nothing to cancel for id {}", brief(request_id));
        return;
      }
      auto c = i->second;
      c->cancelled = true;
      if (!c->running) {
        pending.erase(std::find(pending.begin(), pending.end(), c));
        calls.erase(i);
        dropped = c->in_batch;
        was_pending = true;
      } else {
        key = c->key;
      }
    }
    if (was_pending) {
      deliver(dropped, std::nullopt);
      return;
    }
    tools.cancel(key);
  }

  // -- progress
  // -----------------------------------------------------------------

  void tick() {
    std::unique_lock<std::mutex> lk{mtx};
    auto next = std::chrono::steady_clock::now() + cfg.progress_interval;
    while (!stopping) {
      auto wake = std::min(next,
                           std::chrono::steady_clock::now() + cancel_retry);
      if (tick_cv.wait_until(lk, wake, [this] { return stopping; }))
        break;
      std::vector<std::string> retry;
      for (auto& [k, c] : calls)
        if (c->running && c->cancelled)
          retry.push_back(c->key);
      if (std::chrono::steady_clock::now() >= next) {
        next += cfg.progress_interval;
        progress(); // under the lock: no progress after a call answered
      }
      if (!retry.empty()) {
        lk.unlock();
        for (auto& key : retry)
          tools.cancel(key);
        lk.lock();
      }
    }
  }

  /// Sends a progress notification for every running call with a token.
  /// Called with `mtx` held.
  void progress() {
    bool with_message = version != "2024-11-05";
    for (auto& [k, c] : calls) {
      if (!c->running || c->cancelled || c->progress_token.is_null())
        continue;
      json p{{"progressToken", c->progress_token}, {"progress", ++c->progress}};
      if (with_message) {
        std::string tail;
        {
          std::lock_guard<std::mutex> guard{c->out_mtx};
          tail = last_lines(c->tail, cfg.progress_lines);
        }
        p["message"] = tail.empty() ? "running, no output yet" : tail;
      }
      send({{"jsonrpc", "2.0"},
            {"method", "notifications/progress"},
            {"params", std::move(p)}});
    }
  }

  // -- shutdown
  // -----------------------------------------------------------------

  void shutdown() {
    std::unique_lock<std::mutex> lk{mtx};
    if (joined)
      return;
    stopping = true;
    for (auto& c : pending) {
      c->cancelled = true;
      calls.erase(dump(c->id));
    }
    pending.clear();
    for (auto& [k, c] : calls)
      c->cancelled = true;
    work_cv.notify_all();
    tick_cv.notify_all();
    // A command may start after its first cancellation: repeat until every
    // call has ended.
    while (!calls.empty()) {
      std::vector<std::string> keys;
      for (auto& [k, c] : calls)
        keys.push_back(c->key);
      lk.unlock();
      for (auto& key : keys)
        tools.cancel(key);
      lk.lock();
      done_cv.wait_for(lk, cancel_retry, [this] { return calls.empty(); });
    }
    joined = true;
    auto threads = std::move(workers);
    lk.unlock();
    for (auto& t : threads)
      t.join();
    if (ticker.joinable())
      ticker.join();
  }
};

server::server(tool_provider& tools, writer write, server_config cfg)
  : impl_(std::make_unique<impl>(tools, std::move(write), std::move(cfg))) {
}

server::~server() {
  shutdown();
}

void server::receive(std::string_view line) {
  impl_->receive(line);
}

void server::shutdown() {
  impl_->shutdown();
}

std::string server::protocol_version() const {
  return impl_->negotiated();
}

size_t server::calls_in_flight() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return impl_->calls.size();
}

void server::reject_line(std::string_view reason) {
  impl_->send(error_response(nullptr, parse_error,
                             fmt::format("Parse error: {}", reason)));
}

result<void> serve_lines(server& srv, int in_fd, int wake_fd, size_t max_line) {
  std::string buf;
  bool skipping = false; // inside a line that was too long
  std::vector<char> chunk(64 * 1024);
  result<void> outcome;
  for (;;) {
    pollfd fds[2] = {{in_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    auto n = ::poll(fds, wake_fd >= 0 ? 2 : 1, -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      outcome = make_errno_error(errno, "poll stdin");
      break;
    }
    if (wake_fd >= 0 && fds[1].revents != 0)
      break;
    auto got = ::read(in_fd, chunk.data(), chunk.size());
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (got < 0) {
      outcome = make_errno_error(errno, "read stdin");
      break;
    }
    if (got == 0) {
      if (!skipping && !buf.empty())
        srv.receive(buf); // a last line without its newline
      break;
    }
    buf.append(chunk.data(), static_cast<size_t>(got));
    auto too_long = [&] {
      srv.reject_line(fmt::format("a message longer than {} bytes", max_line));
    };
    size_t start = 0;
    for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos;
         start = nl + 1) {
      if (skipping)
        skipping = false; // the end of a line already answered
      else if (nl - start > max_line)
        too_long();
      else
        srv.receive(std::string_view{buf}.substr(start, nl - start));
    }
    buf.erase(0, start);
    if (!skipping && buf.size() > max_line) {
      too_long();
      skipping = true;
    }
    if (skipping)
      buf.clear();
  }
  srv.shutdown();
  return outcome;
}

} // namespace sandbox::mcp
