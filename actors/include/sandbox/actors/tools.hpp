#pragma once

// The tools an agent uses on a session (shell, code, file_editor): a name, a
// description written for a model, a JSON Schema of the input and a call.
// The MCP server (`sandbox mcp`) serves exactly these.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/actors/blocking_session.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"

namespace sandbox::actors {

/// What a tool call returns: text content for the model, the same facts in
/// structured form, and whether the tool failed (a failed tool is a result,
/// not a protocol error).
struct tool_result {
  std::string text;
  nlohmann::json structured = nlohmann::json::object();
  bool is_error = false;
};

/// What the caller of a tool gives besides the arguments.
struct tool_call_context {
  /// The cancel key of the execution a `shell`/`code` call starts; the
  /// caller cancels the call with `blocking_session::cancel(key)`. Empty:
  /// the tool picks a unique one.
  std::string cancel_key;
  /// Sees each output chunk of a `shell`/`code` call as it arrives (in the
  /// calling thread); may be empty.
  std::function<void(const output_chunk&)> on_output;
};

/// One tool.
struct tool {
  std::string name;
  std::string description;
  /// JSON Schema (draft 2020-12 subset) of the `arguments` object.
  nlohmann::json input_schema;
};

/// The tools of one session. Not thread-safe for edits of one file; calls
/// of `shell`/`code` may run concurrently from several threads.
class toolbox {
public:
  explicit toolbox(blocking_session& session);
  ~toolbox();

  toolbox(const toolbox&) = delete;
  toolbox& operator=(const toolbox&) = delete;

  /// Every tool with its schema, in a fixed order.
  const std::vector<tool>& tools() const;

  /// Calls the tool `name` with `arguments`.
  /// @returns `invalid_argument` when `name` is unknown or `arguments` do
  ///   not match the tool's schema (the message names the tool and the
  ///   offending member); otherwise the tool's result, `is_error` set when
  ///   the tool itself failed.
  result<tool_result> call(const std::string& name,
                           const nlohmann::json& arguments,
                           const tool_call_context& ctx = {});

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandbox::actors
