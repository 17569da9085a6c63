#pragma once

// The Model Context Protocol server behind `sandbox mcp` (docs/mcp.md): the
// JSON-RPC 2.0 layer over one message per line, version negotiation,
// tools/list and tools/call on a tool provider, progress notifications of
// long calls and their cancellation. It knows the tools only through
// `tool_provider`, so that it can be tested without a node.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/errc.hpp"
#include "sandbox/tools/tools.hpp"

namespace sandbox::mcp {

/// The protocol versions the server speaks, newest first.
extern const std::vector<std::string> protocol_versions;

/// JSON-RPC 2.0 error codes the server answers with.
constexpr int parse_error = -32700;
constexpr int invalid_request = -32600;
constexpr int method_not_found = -32601;
constexpr int invalid_params = -32602;
constexpr int internal_error = -32603;

/// What the server needs from the tools: the toolbox of the session in
/// `sandbox mcp`, a fake in the tests.
class tool_provider {
public:
  virtual ~tool_provider();

  /// Every tool with its schema, in a fixed order.
  virtual std::vector<actors::tool> tools() = 0;

  /// Runs one call to its end (from a worker thread; several at once).
  /// `invalid_argument`: unknown tool or arguments not matching its schema.
  virtual result<actors::tool_result> call(const std::string& name,
                                           const nlohmann::json& arguments,
                                           const actors::tool_call_context& ctx)
    = 0;

  /// Ends the call whose context carried `cancel_key` (its whole process
  /// tree); a no-op when nothing runs under that key (yet).
  virtual void cancel(const std::string& cancel_key) = 0;
};

/// The threads tool calls run on: a pool of workers (a call holds one
/// while it runs) and one ticker thread for the progress and cancel
/// timers. One set may serve many servers (`sandbox serve --http` shares
/// one among its MCP sessions); without one, a server makes its own.
struct call_executors {
  explicit call_executors(size_t workers);
  ~call_executors();
  struct impl;
  std::unique_ptr<impl> pools;
};

struct server_config {
  /// serverInfo of the initialize result.
  std::string name = "sandbox";
  std::string version = "unknown";
  /// Calls that run at once; later ones wait for a free worker (when the
  /// server makes its own `call_executors`).
  size_t workers = 8;
  /// Shared executors; null: the server makes its own.
  std::shared_ptr<call_executors> executors;
  /// How often a running call with a progress token reports progress.
  std::chrono::milliseconds progress_interval{500};
  /// How many of the latest output lines a progress message carries.
  size_t progress_lines = 10;
};

/// One MCP session's server. `receive` takes each line read from the
/// client; every message for the client goes to `write` as one line
/// (without its newline), one at a time.
class server {
public:
  using writer = std::function<void(const std::string& line)>;

  server(tool_provider& tools, writer write, server_config cfg = {});
  ~server();

  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Handles one line: a message, a batch or garbage (answered with an
  /// error). Requests answer synchronously except `tools/call`, which runs
  /// on a worker and answers when done. Called from one thread.
  void receive(std::string_view line);

  /// Answers a line that could not be read (e.g. too long) with a parse
  /// error naming `reason`.
  void reject_line(std::string_view reason);

  /// Cancels every call that runs or waits (they answer nothing) and waits
  /// until they have ended; later lines are ignored. Returns how many calls
  /// it cancelled (0 the second time).
  size_t shutdown();

  /// As `shutdown` without waiting: `done` gets the count once every call
  /// has ended (on a thread of the call executors); the server may be
  /// destroyed from then on, on another thread than `done`'s.
  void shutdown_async(std::function<void(size_t)> done);

  /// The negotiated protocol version; empty before `initialize`.
  std::string protocol_version() const;

  /// Calls that run or wait for a worker.
  size_t calls_in_flight() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Reads lines from `in_fd` into `srv` until the input ends or `wake_fd`
/// becomes readable (e.g. an interrupt or a failed write); then shuts the
/// server down (at the end of the input, a warning names the calls that
/// were cancelled without an answer). Lines longer than `max_line` bytes are
/// answered with a parse error and skipped.
result<void> serve_lines(server& srv, int in_fd, int wake_fd,
                         size_t max_line = 64 * 1024 * 1024);

} // namespace sandbox::mcp
