#pragma once

// The tools that run something in the session: `shell` (a command) and
// `code` (code with an interpreter). Both answer an execution result.

#include <nlohmann/json.hpp>

#include "sandbox/client/blocking_session.hpp"
#include "sandbox/tools/tools.hpp"

namespace sandbox::actors::detail {

/// The spec (name, description, schema) of `shell`.
tool shell_tool(const toolbox_options& opts);

/// The spec of `code`.
tool code_tool(const toolbox_options& opts);

/// Runs a `shell` call; `args` passed the schema.
tool_result call_shell(blocking_session& session, const toolbox_options& opts,
                       const nlohmann::json& args,
                       const tool_call_context& ctx);

/// Runs a `code` call; `args` passed the schema.
tool_result call_code(blocking_session& session, const toolbox_options& opts,
                      const nlohmann::json& args, const tool_call_context& ctx);

} // namespace sandbox::actors::detail
