#pragma once

// The tools of one session as the MCP server's tool provider: the toolbox
// (shell, code, file_editor, process_*) of a blocking session facade.
// `sandbox mcp` serves one over stdio, `sandbox serve --http` one per MCP
// session.

#include <spdlog/spdlog.h>

#include "mcp/server.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/tools/tools.hpp"

namespace sandbox::mcp {

class session_tools : public tool_provider {
public:
  /// `s` must outlive the provider.
  explicit session_tools(actors::blocking_session& s) : session_(s), box_(s) {
  }

  std::vector<actors::tool> tools() override {
    return box_.tools();
  }

  result<actors::tool_result>
  call(const std::string& name, const nlohmann::json& arguments,
       const actors::tool_call_context& ctx) override {
    return box_.call(name, arguments, ctx);
  }

  void cancel(const std::string& cancel_key) override {
    if (auto r = session_.cancel(cancel_key); !r)
      spdlog::warn("mcp: cancel {}: {}", cancel_key, r.error().message);
  }

private:
  actors::blocking_session& session_;
  actors::toolbox box_;
};

} // namespace sandbox::mcp
