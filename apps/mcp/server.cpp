#include "mcp/server.hpp"

#include <algorithm>
#include <mutex>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "calls.hpp"
#include "jsonrpc.hpp"

namespace sandbox::mcp {

const std::vector<std::string> protocol_versions{"2025-11-25", "2025-06-18",
                                                 "2025-03-26", "2024-11-05"};

tool_provider::~tool_provider() = default;

using jsonrpc::batch_ptr;
using jsonrpc::brief;
using jsonrpc::error_response;
using jsonrpc::json;
using jsonrpc::result_response;

/// The MCP methods: initialize, ping, tools/list, tools/call and the
/// cancellation notification. JSON-RPC is jsonrpc.cpp's, the calls are
/// `call_pool`'s.
struct server::impl : jsonrpc::handler {
  impl(tool_provider& t, writer w, server_config c)
    : tools(t),
      cfg(std::move(c)),
      out(std::move(w)),
      pool(tools, out, cfg, [this] { return negotiated(); }) {
  }

  tool_provider& tools;
  server_config cfg;
  jsonrpc::output out;

  mutable std::mutex mtx;
  /// The negotiated protocol version (guarded by `mtx`).
  std::string version;
  /// Set by `shutdown` (guarded by `mtx`).
  bool stopping = false;
  /// Only the reader thread asks for it.
  std::optional<std::vector<actors::tool>> tool_list;

  call_pool pool;

  std::string negotiated() const {
    std::lock_guard<std::mutex> guard{mtx};
    return version;
  }

  const std::vector<actors::tool>& tool_specs() {
    if (!tool_list)
      tool_list = tools.tools();
    return *tool_list;
  }

  void receive(std::string_view line) {
    std::string v;
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (stopping)
        return;
      v = version;
    }
    jsonrpc::read_line(line, v, out, *this);
  }

  size_t shutdown() {
    {
      std::lock_guard<std::mutex> guard{mtx};
      stopping = true;
    }
    return pool.shutdown();
  }

  void shutdown_async(std::function<void(size_t)> done) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      stopping = true;
    }
    pool.shutdown_async(std::move(done));
  }

  // -- jsonrpc::handler -------------------------------------------------------

  void notification(const std::string& method, const json& params) override {
    if (method == "notifications/cancelled") {
      if (params.is_object() && params.contains("requestId")
          && jsonrpc::valid_id(params["requestId"]))
        pool.cancel(params["requestId"]);
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
               const batch_ptr& b) override {
    if (params.is_array())
      return out.deliver(
        b, error_response(id, invalid_params,
                          fmt::format("Invalid params: {} takes an object",
                                      method)));
    if (method == "initialize")
      return out.deliver(b, initialize(id, params));
    if (method == "ping")
      return out.deliver(b, result_response(id, json::object()));
    if (method == "tools/list") {
      // Versions are dates: a later one compares greater.
      auto v = negotiated();
      json list = json::array();
      for (auto& t : tool_specs()) {
        json item{{"name", t.name}};
        if (v >= "2025-06-18" && !t.title.empty())
          item["title"] = t.title;
        item["description"] = t.description;
        item["inputSchema"] = json(t.input_schema);
        if (v >= "2025-11-25" && !t.output_schema.empty())
          item["outputSchema"] = json(t.output_schema);
        if (v >= "2025-03-26" && !t.annotations.empty())
          item["annotations"] = json(t.annotations);
        list.push_back(std::move(item));
      }
      return out.deliver(b, result_response(id, {{"tools", std::move(list)}}));
    }
    if (method == "tools/call")
      return start_call(id, params, b);
    if (method == "logging/setLevel") {
      // The server logs to its own stderr, never to the client: any level
      // is accepted and nothing is sent at it.
      static const std::vector<std::string> levels{"debug",  "info",
                                                   "notice", "warning",
                                                   "error",  "critical",
                                                   "alert",  "emergency"};
      if (!params.is_object() || !params.contains("level")
          || !params["level"].is_string()
          || std::find(levels.begin(), levels.end(),
                       params["level"].get<std::string>())
               == levels.end())
        return out.deliver(
          b, error_response(id, invalid_params,
                            "Invalid params: logging/setLevel needs "
                            "params.level, one of debug, info, notice, "
                            "warning, error, critical, alert, emergency"));
      return out.deliver(b, result_response(id, json::object()));
    }
    out.deliver(b, error_response(id, method_not_found,
                                  fmt::format("Method not found: {}", method)));
  }

  // -- methods ----------------------------------------------------------------

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
           {"capabilities",
            {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}},
           {"serverInfo", {{"name", cfg.name}, {"version", cfg.version}}}});
  }

  void start_call(const json& id, const json& params, const batch_ptr& b) {
    if (!params.is_object() || !params.contains("name")
        || !params["name"].is_string())
      return out.deliver(b, error_response(id, invalid_params,
                                           "Invalid params: tools/call needs "
                                           "params.name (a string)"));
    auto name = params["name"].get<std::string>();
    json arguments = json::object();
    if (auto a = params.find("arguments"); a != params.end() && !a->is_null()) {
      if (!a->is_object())
        return out.deliver(
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
      return out.deliver(
        b, error_response(id, invalid_params,
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
          tok != meta->end() && jsonrpc::valid_id(*tok))
        c->progress_token = *tok;
    }
    switch (pool.start(c)) {
      case call_pool::queued::yes:
      case call_pool::queued::stopping: // no answer: the server goes away
        return;
      case call_pool::queued::id_in_use:
        break;
    }
    out.deliver(b, error_response(id, invalid_request,
                                  fmt::format("Invalid Request: id {} is in "
                                              "use by a call that has not "
                                              "answered yet",
                                              brief(id))));
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

void server::reject_line(std::string_view reason) {
  impl_->out.send(error_response(nullptr, parse_error,
                                 fmt::format("Parse error: {}", reason)));
}

size_t server::shutdown() {
  return impl_->shutdown();
}

void server::shutdown_async(std::function<void(size_t)> done) {
  impl_->shutdown_async(std::move(done));
}

std::string server::protocol_version() const {
  return impl_->negotiated();
}

size_t server::calls_in_flight() const {
  return impl_->pool.in_flight();
}

} // namespace sandbox::mcp
