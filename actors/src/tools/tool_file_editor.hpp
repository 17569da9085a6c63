#pragma once

// The `file_editor` tool: view, create, str_replace, insert and undo_edit on
// files of the session, through its filesystem worker (so it works on any
// node). Every write is atomic and compare-and-swap: an edit never
// overwrites a change made after the file was read.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/client/blocking_files.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/tools/tools.hpp"

namespace sandbox::actors::detail {

/// The file editor of one toolbox. Not thread-safe: the toolbox serialises
/// calls.
class file_editor {
public:
  file_editor(blocking_session& session, const toolbox_options& opts);

  /// The spec (name, description, schema) of `file_editor`.
  static tool spec();

  /// Runs a call; `args` passed the schema.
  tool_result call(const nlohmann::json& args);

private:
  /// One edit of a file, for `undo_edit`.
  struct edit {
    /// The content before the edit; nullopt when the edit created the file.
    std::optional<std::string> before;
    /// The file's version right after the edit (the undo's CAS token).
    std::string version_after;
  };

  /// A text file as read for an edit, with the version it was read at.
  struct text_file {
    std::string content;
    std::string version;
  };

  /// The filesystem worker, asked for once.
  result<blocking_files*> files();

  /// Reads `path` for an edit: a regular text file within the size limit,
  /// content and version consistent. A symlink is refused unless
  /// `follow_links` (view). Sets `failure` when it cannot.
  std::optional<text_file> load(const std::string& path, bool follow_links,
                                std::optional<tool_result>& failure);

  /// Writes `content` over `path` if it is still at `expected` (empty: if
  /// it does not exist) and records the edit for undo, `before` being what
  /// the file held (nullopt: nothing). Fails with the worker's error.
  result<void> write_recorded(const std::string& path, std::string content,
                              const std::string& expected,
                              std::optional<std::string> before);

  /// Writes `after` over `path` if it is still at `version`, records the
  /// edit for undo and answers `message` plus a snippet of lines
  /// `first..last` of the new content.
  tool_result commit(const std::string& path, const text_file& file,
                     std::string after, size_t first, size_t last,
                     std::string message, nlohmann::json structured);

  tool_result view(const std::string& path, const nlohmann::json& args);
  tool_result view_directory(const std::string& path);
  tool_result create(const std::string& path, const nlohmann::json& args);
  tool_result str_replace(const std::string& path, const nlohmann::json& args);
  tool_result insert(const std::string& path, const nlohmann::json& args);
  tool_result undo_edit(const std::string& path);

  blocking_session& session_;
  const toolbox_options& opts_;
  std::optional<blocking_files> files_;
  /// Edits per (normalised) path, oldest first; at most `max_undo` each.
  std::map<std::string, std::vector<edit>> history_;
};

} // namespace sandbox::actors::detail
