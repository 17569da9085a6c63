#pragma once

// The tools an agent uses on a session (shell, code, file_editor): a name, a
// description written for a model, a JSON Schema of the input and a call.
// The MCP server (`sandbox mcp`) serves exactly these. docs/mcp.md ("Tools")
// lists every schema, behaviour, error text and result shape.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/client/blocking_session.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"

namespace sandbox::actors {

/// What a tool call returns: text content for the model, the same facts in
/// structured form, and whether the tool failed (a failed tool is a result,
/// not a protocol error).
///
/// A failed tool has `is_error` set, `text` saying what went wrong and
/// `structured` = `{"error": CODE, "message": TEXT}`. Every string in
/// `structured` is valid UTF-8 (invalid bytes of an output become U+FFFD),
/// so it can be dumped as is.
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
  /// calling thread); may be empty. Chunks are the raw bytes (not made
  /// valid UTF-8; a valid sequence is never split across chunks).
  std::function<void(const output_chunk&)> on_output;
};

/// One tool.
struct tool {
  std::string name;
  std::string description;
  /// JSON Schema of the `arguments` object, using only keywords that mean
  /// the same in drafts 7 and 2020-12 (no `$schema` member).
  nlohmann::json input_schema;
  /// A name for people (MCP's `title`).
  std::string title;
  /// MCP's tool annotations: `readOnlyHint`, `destructiveHint`,
  /// `idempotentHint`, `openWorldHint`.
  nlohmann::json annotations = nlohmann::json::object();
  /// JSON Schema of the result's `structured` object (MCP's
  /// `outputSchema`); it also admits a failed tool's `{"error",
  /// "message"}`.
  nlohmann::json output_schema = nlohmann::json::object();
};

/// Limits of a toolbox.
struct toolbox_options {
  /// Bytes of stdout and of stderr that a `shell`/`code` result keeps, each
  /// (head and tail; the bytes between are dropped and counted).
  uint64_t output_cap = 32 * 1024;
  /// Largest file (bytes) that `file_editor` views or edits.
  uint64_t max_file_bytes = 8u << 20;
  /// Numbered text a `view` of a file shows at most (bytes); a longer view
  /// is cut at a line end and says how to see the rest.
  uint64_t max_view_bytes = 128 * 1024;
  /// Entries a `view` of a directory lists at most.
  size_t max_dir_entries = 1000;
  /// Edits of one file that `undo_edit` can revert at most (the oldest is
  /// forgotten first); each keeps the file's previous content.
  size_t max_undo = 32;
};

/// The tools of one session. `shell`/`code` calls may run concurrently from
/// several threads; `file_editor` calls are serialised by the toolbox (its
/// undo history is per toolbox, i.e. per session of an MCP server).
class toolbox {
public:
  /// The session must outlive the toolbox. Nothing is started here: the
  /// session's filesystem worker is asked for at the first `file_editor`
  /// call.
  explicit toolbox(blocking_session& session, toolbox_options opts = {});
  ~toolbox();

  toolbox(const toolbox&) = delete;
  toolbox& operator=(const toolbox&) = delete;

  /// Every tool with its schema, in a fixed order: shell, code,
  /// file_editor.
  const std::vector<tool>& tools() const;

  /// Calls the tool `name` with `arguments` (null counts as `{}`).
  /// @returns `invalid_argument` when `name` is unknown (`unknown tool:
  ///   "NAME"`) or `arguments` do not match the tool's schema (the message
  ///   starts with the tool's name and names the offending member);
  ///   otherwise the tool's result, `is_error` set when the tool itself
  ///   failed (a missing file, a bad range, a stopped session...). A
  ///   non-zero exit code of a command is not a failure.
  result<tool_result> call(const std::string& name,
                           const nlohmann::json& arguments,
                           const tool_call_context& ctx = {});

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandbox::actors
