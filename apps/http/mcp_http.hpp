#pragma once

// MCP's Streamable HTTP transport at /mcp (private; docs/mcp.md, "Over
// HTTP"): MCP sessions named by `Mcp-Session-Id`, each bound to a sandbox
// session and served by its own `mcp::server`; answers as JSON or as an
// SSE stream whose events can be replayed after a dropped connection
// (`Last-Event-ID`).

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "api.hpp"
#include "exchange.hpp"

namespace sandbox::mcp {
struct call_executors;
} // namespace sandbox::mcp

namespace sandbox::http {

struct mcp_config {
  std::string version;
  std::chrono::milliseconds idle{30 * 60 * 1000};
  size_t workers = 16;
};

class mcp_endpoint {
public:
  mcp_endpoint(api_context& api, boost::asio::io_context& ctx, mcp_config cfg);
  ~mcp_endpoint();

  /// Serves one request to /mcp.
  void serve(const exchange_ptr& ex);

  /// Ends every MCP session (their calls are cancelled; the sandbox
  /// sessions they made are stopped). Blocks until done: call it from a
  /// thread that is not the reactor's. Idempotent.
  void shutdown();

  /// MCP sessions open now.
  size_t sessions() const;

  struct session;

private:
  void post(const exchange_ptr& ex);
  void resume(const exchange_ptr& ex);
  void remove(const exchange_ptr& ex);
  void start_session(const exchange_ptr& ex, json body, std::string text);
  void dispatch(const std::shared_ptr<session>& s, const exchange_ptr& ex,
                json body, std::string text);
  std::shared_ptr<session> find(const exchange_ptr& ex);
  /// Ends `s` on a worker (its calls may take a moment to end).
  void end(std::shared_ptr<session> s, std::function<void()> then = {});
  void arm_idle();

  api_context& api_;
  mcp_config cfg_;
  std::shared_ptr<mcp::call_executors> exec_;
  mutable std::mutex mtx_;
  std::map<std::string, std::shared_ptr<session>> sessions_;
  boost::asio::strand<boost::asio::io_context::executor_type> idle_strand_;
  boost::asio::steady_timer idle_timer_;
  /// Set by `shutdown` (on the strand).
  bool idle_stopped_ = false;
  std::atomic<bool> shut_{false};
};

} // namespace sandbox::http
