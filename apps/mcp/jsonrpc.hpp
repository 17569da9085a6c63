#pragma once

// JSON-RPC 2.0 for the MCP server (docs/mcp.md): the envelope of a message
// (jsonrpc, id, method, params) and its errors, batches, and the output
// that writes one message per line. What a method means is the server's
// business (server.cpp), reached through `handler`.

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sandbox::mcp::jsonrpc {

/// Members in the order they are built: "jsonrpc", "id", then the rest.
using json = nlohmann::ordered_json;

/// The only version whose transport takes JSON-RPC batches: 2025-06-18
/// removed them, 2024-11-05 never had them.
constexpr const char* batch_version = "2025-03-26";

/// `j` as one line; invalid UTF-8 (tool output may hold it) becomes U+FFFD.
std::string dump(const json& j);

json error_response(const json& id, int code, std::string message);

json result_response(const json& id, json result);

/// MCP: "Requests MUST include a string or integer ID", never null.
bool valid_id(const json& id);

/// A short form of `j` for messages (at most 80 characters).
std::string brief(const json& j);

/// The responses of one batch, written as one array once every member is
/// done (an array of nothing but notifications answers nothing).
struct batch {
  std::mutex mtx;
  json responses = json::array();
  /// Members not done yet, plus one while the batch is being read.
  size_t outstanding = 1;
};

using batch_ptr = std::shared_ptr<batch>;

/// Where messages for the client go: one line each, one at a time (from
/// any thread).
class output {
public:
  using writer = std::function<void(const std::string& line)>;

  explicit output(writer write);

  /// Writes `msg` on a line of its own.
  void send(const json& msg);

  /// Delivers the answer of one message of batch `b` (null: not in a batch;
  /// no `response`: a notification or a cancelled call). Called exactly once
  /// per message.
  void deliver(const batch_ptr& b, std::optional<json> response);

private:
  std::mutex mtx_;
  writer write_;
};

/// What a well-formed message asks for.
class handler {
public:
  virtual ~handler();

  /// A message without an id: nobody waits for an answer.
  virtual void notification(const std::string& method, const json& params) = 0;

  /// A request; its answer goes to `deliver(b, ...)`, exactly once, now or
  /// later. `params` is null or an object or an array.
  virtual void request(const json& id, const std::string& method,
                       const json& params, const batch_ptr& b)
    = 0;
};

/// Reads one line: a message, a batch (accepted only under
/// `batch_version`; `version` is the negotiated one, empty before
/// `initialize`) or garbage. Answers what is malformed itself and hands
/// every well-formed message to `h`.
void read_line(std::string_view line, const std::string& version, output& out,
               handler& h);

} // namespace sandbox::mcp::jsonrpc
