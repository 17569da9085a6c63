#pragma once

// The tools that run something in the session: `shell` (a command) and
// `code` (code with an interpreter). Both answer an execution result.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sandbox/client/blocking_session.hpp"
#include "sandbox/tools/tools.hpp"

namespace sandbox::actors::detail {

/// "exit code 0", "exit code 137: killed by signal 9 (SIGKILL)", "exit
/// code 124: timed out after 2 s" (`timeout` 0: without the figure)...:
/// how an ended command is told in a tool's text.
std::string exit_phrase(int32_t exit_code, exit_reason reason,
                        std::chrono::milliseconds timeout);

/// The schema of a `cwd` member, and of an `env` member, of a tool that
/// starts something (`whose`: "the command", "this process"...).
nlohmann::json cwd_schema(std::string_view whose);
nlohmann::json env_schema(std::string_view whose);

/// `cwd` and `env` of arguments that passed such a schema.
void read_cwd_and_env(const nlohmann::json& args, exec_options& out);

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
