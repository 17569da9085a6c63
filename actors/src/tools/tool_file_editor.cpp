#include "tool_file_editor.hpp"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "sandbox/fs/path_resolver.hpp"
#include "tool_schema.hpp"
#include "tool_text.hpp"

namespace sandbox::actors::detail {

namespace {

using nlohmann::json;

/// Line numbers listed for an ambiguous `old_str`.
constexpr size_t max_listed_lines = 20;

/// How many times a read retries when the file changes under it.
constexpr int read_attempts = 3;

/// The members each command takes besides `command` and `path`.
struct command_members {
  std::string_view command;
  std::vector<std::string_view> required;
  std::vector<std::string_view> optional;
};

const std::vector<command_members>& commands() {
  static const std::vector<command_members> xs = {
    {"view", {}, {"view_range"}},
    {"create", {"file_text"}, {}},
    {"str_replace", {"old_str"}, {"new_str"}},
    {"insert", {"insert_line", "new_str"}, {}},
    {"undo_edit", {}, {}},
  };
  return xs;
}

} // namespace

file_editor::file_editor(blocking_session& session, const toolbox_options& opts)
  : session_(session), opts_(opts) {
}

tool file_editor::spec() {
  tool t;
  t.name = "file_editor";
  t.description
    = "View, create and edit text files in the sandbox. `path` must be "
      "absolute (no `..` segments). Commands:\n"
      "- view: a file is shown with numbered lines (as `cat -n`), all of "
      "it or the lines `view_range` [first, last] (1-based, inclusive; -1 "
      "as last means the end of the file); a directory lists the files and "
      "directories up to 2 levels below it, hidden ones excluded.\n"
      "- create: writes `file_text` to a new file, creating its parent "
      "directories; it never overwrites an existing file.\n"
      "- str_replace: replaces `old_str`, which must occur exactly once in "
      "the file, by `new_str` (absent: deletes it). Match whitespace and "
      "indentation exactly; include enough surrounding lines to make "
      "`old_str` unique.\n"
      "- insert: inserts `new_str` after line `insert_line` (0: at the top "
      "of the file).\n"
      "- undo_edit: reverts the last edit of `path` made by this tool; "
      "repeat it to step further back.\n"
      "Each edit answers with a numbered snippet around the change. Binary "
      "files (NUL bytes or invalid UTF-8) are refused.";
  t.input_schema
    = {{"type", "object"},
       {"properties",
        {{"command",
          {{"type", "string"},
           {"enum", {"view", "create", "str_replace", "insert", "undo_edit"}},
           {"description", "The operation."}}},
         {"path",
          {{"type", "string"},
           {"description", "Absolute path of the file or directory, e.g. "
                           "/home/user/project/main.py."}}},
         {"file_text",
          {{"type", "string"},
           {"description", "create: the content of the new file."}}},
         {"view_range",
          {{"type", "array"},
           {"items", {{"type", "integer"}}},
           {"minItems", 2},
           {"maxItems", 2},
           {"description", "view of a file: [first, last] line, 1-based and "
                           "inclusive; -1 as last means the end of the "
                           "file."}}},
         {"old_str",
          {{"type", "string"},
           {"description", "str_replace: the exact text to replace; it must "
                           "occur exactly once in the file."}}},
         {"new_str",
          {{"type", "string"},
           {"description", "str_replace: the replacement (absent: delete "
                           "old_str); insert: the text to insert."}}},
         {"insert_line",
          {{"type", "integer"},
           {"minimum", 0},
           {"description", "insert: the line after which new_str goes; 0 "
                           "inserts at the top of the file."}}}}},
       {"required", {"command", "path"}},
       {"additionalProperties", false}};
  t.title = "View and edit files";
  t.output_schema = output_schema({{"command", {{"type", "string"}}},
                                   {"path", {{"type", "string"}}},
                                   {"kind", {{"type", "string"}}},
                                   {"content", {{"type", "string"}}},
                                   {"entries", {{"type", "array"}}},
                                   {"truncated", {{"type", "boolean"}}}});
  t.annotations = hints(false, true, false, false);
  return t;
}

result<blocking_files*> file_editor::files() {
  if (!files_) {
    auto f = files_of(session_);
    if (!f)
      return f.error();
    files_.emplace(std::move(*f));
  }
  return &*files_;
}

tool_result file_editor::call(const json& args) {
  auto command = args.at("command").get<std::string>();
  auto raw_path = args.at("path").get<std::string>();
  // The members of this command: the schema accepts the members of every
  // command, each command takes only its own.
  auto spec = std::find_if(commands().begin(), commands().end(),
                           [&](auto& c) { return c.command == command; });
  for (auto& item : args.items()) {
    // A named variable, not a structured binding: C++17 lambdas cannot
    // capture those (clang refuses).
    const std::string& key = item.key();
    if (key == "command" || key == "path")
      continue;
    auto in = [&](auto& xs) {
      return std::find(xs.begin(), xs.end(), key) != xs.end();
    };
    if (!in(spec->required) && !in(spec->optional)) {
      std::string takes = "path";
      for (auto& x : spec->required)
        takes += fmt::format(", {}", x);
      for (auto& x : spec->optional)
        takes += fmt::format(", {} (optional)", x);
      return tool_failure("invalid_parameter",
                          fmt::format("Parameter `{}` is not used by command "
                                      "`{}` (it takes {}).",
                                      key, command, takes));
    }
  }
  for (auto& x : spec->required)
    if (!args.contains(std::string{x}))
      return tool_failure("missing_parameter",
                          fmt::format("Parameter `{}` is required for "
                                      "command `{}`.",
                                      x, command));
  // Absolute paths only, and no `..`: what the model names is what gets
  // touched, whatever the session's working directory.
  if (raw_path.empty() || raw_path.front() != '/') {
    std::string hint;
    if (auto info = session_.info(); info && !raw_path.empty())
      hint = fmt::format(
        " Maybe you meant {}?",
        show_path(fs::resolve(info->working_directory, raw_path)));
    return tool_failure("invalid_path",
                        fmt::format("The path \"{}\" is not an absolute path: "
                                    "file_editor takes absolute paths "
                                    "only.{}",
                                    show_path(raw_path), hint));
  }
  for (size_t pos = 0; pos != std::string::npos;) {
    auto next = raw_path.find('/', pos + 1);
    auto seg = raw_path.substr(
      pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    if (seg == "..")
      return tool_failure("invalid_path",
                          fmt::format("The path {} has a `..` segment: give "
                                      "the absolute path without `..`.",
                                      show_path(raw_path)));
    pos = next;
  }
  auto path = fs::resolve("/", raw_path);
  if (command == "view")
    return view(path, args);
  if (command == "create")
    return create(path, args);
  if (command == "str_replace")
    return str_replace(path, args);
  if (command == "insert")
    return insert(path, args);
  return undo_edit(path);
}

// -- reading and writing for edits --------------------------------------------

std::optional<file_editor::text_file>
file_editor::load(const std::string& path, bool follow_links,
                  std::optional<tool_result>& failure) {
  auto fs = files();
  if (!fs) {
    failure = fs_failure(path, fs.error());
    return std::nullopt;
  }
  for (int attempt = 0; attempt < read_attempts; ++attempt) {
    auto before = (*fs)->stat(path);
    if (!before) {
      failure = fs_failure(path, before.error());
      return std::nullopt;
    }
    if (before->kind == fs::file_kind::symlink && !follow_links) {
      failure = tool_failure("not_a_regular_file",
                             fmt::format("{} is a symbolic link: file_editor "
                                         "edits regular files; give the "
                                         "path of its target.",
                                         show_path(path)));
      return std::nullopt;
    }
    if (before->kind != fs::file_kind::file
        && before->kind != fs::file_kind::symlink) {
      failure = tool_failure("not_a_regular_file",
                             fmt::format("{} is not a regular file.",
                                         show_path(path)));
      return std::nullopt;
    }
    auto too_large = [&](uint64_t size) {
      return tool_failure(
        "too_large",
        fmt::format("{} is {} bytes, over file_editor's limit of {} bytes: "
                    "use the shell tool to work on it (head, sed -n, ...).",
                    show_path(path), size, opts_.max_file_bytes));
    };
    // A regular file is measured before it is read; a link's target after.
    if (before->kind == fs::file_kind::file
        && before->size > opts_.max_file_bytes) {
      failure = too_large(before->size);
      return std::nullopt;
    }
    auto content = (*fs)->read_file(path);
    if (!content) {
      failure = fs_failure(path, content.error());
      return std::nullopt;
    }
    if (content->size() > opts_.max_file_bytes) {
      failure = too_large(content->size());
      return std::nullopt;
    }
    auto after = (*fs)->stat(path);
    if (!after) {
      failure = fs_failure(path, after.error());
      return std::nullopt;
    }
    // The content belongs to the version only if nothing changed while it
    // was read.
    if (after->version != before->version)
      continue;
    if (auto why = binary_reason(*content)) {
      failure = tool_failure(
        "binary_file",
        fmt::format("{} is a binary file ({}): file_editor views and edits "
                    "text files only; use the shell tool for it.",
                    show_path(path), *why));
      return std::nullopt;
    }
    return text_file{std::move(*content), before->version};
  }
  failure = tool_failure("conflict",
                         fmt::format("{} kept changing while it was read; "
                                     "try again.",
                                     show_path(path)));
  return std::nullopt;
}

result<void> file_editor::write_recorded(const std::string& path,
                                         std::string content,
                                         const std::string& expected,
                                         std::optional<std::string> before) {
  auto fs = files();
  if (!fs)
    return fs.error();
  if (auto w = (*fs)->write_file(path, std::move(content), expected); !w)
    return w.error();
  auto st = (*fs)->stat(path);
  auto& edits = history_[path];
  edits.push_back({std::move(before), st ? st->version : std::string{}});
  if (edits.size() > opts_.max_undo)
    edits.erase(edits.begin());
  return {};
}

tool_result file_editor::commit(const std::string& path, const text_file& file,
                                std::string after, size_t first, size_t last,
                                std::string message, json structured) {
  auto snip = snippet(after, first, last);
  auto w = write_recorded(path, std::move(after), file.version, file.content);
  if (!w) {
    if (w.error().code == errc::conflict)
      return tool_failure("conflict",
                          fmt::format("{} changed since it was read (another "
                                      "program wrote it); nothing was "
                                      "written: view it and edit again.",
                                      show_path(path)));
    return fs_failure(path, w.error());
  }
  tool_result r;
  r.text = fmt::format("{} Here's the result of running `cat -n` on a "
                       "snippet of {}:\n{}Review the changes; edit again or "
                       "use undo_edit if they are not as expected.\n",
                       message, show_path(path), snip);
  structured["path"] = show_path(path);
  structured["first_line"] = first;
  structured["last_line"] = last;
  r.structured = std::move(structured);
  return r;
}

// -- edits
// ---------------------------------------------------------------------

tool_result file_editor::create(const std::string& path, const json& args) {
  auto text = args.at("file_text").get<std::string>();
  if (auto refused = refuse_binary("file_text", text))
    return std::move(*refused);
  auto lines = line_count(text);
  auto snip = snippet(text, 1, lines);
  auto bytes = text.size();
  // An empty version: the file must not exist (checked atomically).
  auto w = write_recorded(path, std::move(text), std::string{}, std::nullopt);
  if (!w) {
    if (w.error().code == errc::conflict)
      return tool_failure("file_exists",
                          fmt::format("File already exists at {}: create "
                                      "never overwrites; use str_replace or "
                                      "insert to change it.",
                                      show_path(path)));
    if (w.error().code == errc::not_a_regular_file)
      return tool_failure("file_exists",
                          fmt::format("A directory or other non-regular file "
                                      "already exists at {}: create makes "
                                      "new files only.",
                                      show_path(path)));
    return fs_failure(path, w.error());
  }
  tool_result r;
  r.text = fmt::format("File created successfully at {} ({}, {}). Here's "
                       "the result of running `cat -n` on a snippet of "
                       "{}:\n{}",
                       show_path(path), plural(lines, "line", "lines"),
                       plural(bytes, "byte", "bytes"), show_path(path), snip);
  r.structured = {{"command", "create"},
                  {"path", show_path(path)},
                  {"lines", lines},
                  {"bytes", bytes}};
  return r;
}

tool_result file_editor::str_replace(const std::string& path,
                                     const json& args) {
  auto old_str = args.at("old_str").get<std::string>();
  auto new_str = args.value("new_str", std::string{});
  if (old_str.empty())
    return tool_failure("invalid_parameter",
                        "Parameter `old_str` must not be empty: give the "
                        "exact text to replace.");
  if (auto refused = refuse_binary("new_str", new_str))
    return std::move(*refused);
  std::optional<tool_result> failure;
  auto file = load(path, false, failure);
  if (!file)
    return std::move(*failure);
  auto& content = file->content;
  // Overlapping occurrences count: "aa" occurs twice in "aaa".
  std::vector<size_t> hits;
  for (auto pos = content.find(old_str); pos != std::string::npos;
       pos = content.find(old_str, pos + 1))
    hits.push_back(pos);
  if (hits.empty())
    return tool_failure("no_match",
                        fmt::format("No replacement was performed: old_str "
                                    "does not occur verbatim in {} (match "
                                    "whitespace and indentation exactly).",
                                    show_path(path)));
  if (hits.size() > 1) {
    std::set<size_t> lines;
    for (auto pos : hits)
      lines.insert(line_of(content, pos));
    std::string list;
    size_t listed = 0;
    for (auto l : lines) {
      if (listed++ == max_listed_lines) {
        list += ", ...";
        break;
      }
      list += (list.empty() ? "" : ", ") + std::to_string(l);
    }
    return tool_failure(
      "multiple_matches",
      fmt::format("No replacement was performed: old_str occurs {} times in "
                  "{}, on {} {}. Include more surrounding lines in old_str "
                  "to make it unique.",
                  hits.size(), show_path(path),
                  lines.size() == 1 ? "line" : "lines", list));
  }
  auto pos = hits.front();
  auto after = content;
  after.replace(pos, old_str.size(), new_str);
  auto first = line_of(content, pos);
  // A replacement that ends with a newline ends on the line before.
  std::string_view body{new_str};
  if (!body.empty() && body.back() == '\n')
    body.remove_suffix(1);
  auto last = new_str.empty() ? first - 1
                              : first
                                  + static_cast<size_t>(
                                    std::count(body.begin(), body.end(), '\n'));
  return commit(path, *file, std::move(after), first, last,
                fmt::format("The file {} has been edited.", show_path(path)),
                {{"command", "str_replace"}});
}

tool_result file_editor::insert(const std::string& path, const json& args) {
  auto line = args.at("insert_line").get<uint64_t>();
  auto new_str = args.at("new_str").get<std::string>();
  if (auto refused = refuse_binary("new_str", new_str))
    return std::move(*refused);
  std::optional<tool_result> failure;
  auto file = load(path, false, failure);
  if (!file)
    return std::move(*failure);
  auto& content = file->content;
  auto lines = split_lines(content);
  auto total = lines.size();
  if (line > total)
    return tool_failure(
      "out_of_range",
      fmt::format("Invalid insert_line {}: {} has {}; give 0 to insert at "
                  "the top, up to {} to insert after the last line.",
                  line, show_path(path), plural(total, "line", "lines"),
                  total));
  size_t offset = 0;
  std::string text = new_str;
  if (line > 0) {
    auto& l = lines[line - 1];
    offset = static_cast<size_t>(l.data() - content.data()) + l.size();
    if (offset < content.size())
      ++offset; // after the line's '\n'
    else if (!text.empty())
      text.insert(0, "\n"); // the last line had no '\n'
  }
  // The inserted lines end with a newline unless they end a file that had
  // none.
  bool newline_after = offset < content.size()
                       || (!content.empty() && content.back() == '\n');
  if (newline_after && !text.empty() && text.back() != '\n')
    text += '\n';
  auto after = content;
  after.insert(offset, text);
  auto added = line_count(new_str);
  return commit(path, *file, std::move(after), line + 1, line + added,
                fmt::format("The file {} has been edited: {} inserted after "
                            "line {}.",
                            show_path(path), plural(added, "line", "lines"),
                            line),
                {{"command", "insert"}});
}

tool_result file_editor::undo_edit(const std::string& path) {
  auto fs = files();
  if (!fs)
    return fs_failure(path, fs.error());
  auto it = history_.find(path);
  if (it == history_.end() || it->second.empty())
    return tool_failure("nothing_to_undo",
                        fmt::format("No edit of {} to undo: undo_edit reverts "
                                    "the edits file_editor made to this file "
                                    "in this session.",
                                    show_path(path)));
  auto& last = it->second.back();
  auto changed = [&] {
    return tool_failure(
      "conflict",
      fmt::format("{} changed since file_editor's last edit of it (another "
                  "program or a shell command wrote it); undo_edit would "
                  "discard that change, so nothing was undone.",
                  show_path(path)));
  };
  auto st = (*fs)->stat(path);
  if (!st || st->version != last.version_after)
    return changed();
  tool_result r;
  if (!last.before) {
    // The edit created the file: undoing it removes the file.
    auto rm = (*fs)->remove_file(path);
    if (!rm)
      return fs_failure(path, rm.error());
    it->second.pop_back();
    r.text = fmt::format("Last edit of {} undone: file_editor had created "
                         "it, so it was removed.\n",
                         show_path(path));
    r.structured = {{"command", "undo_edit"},
                    {"path", show_path(path)},
                    {"restored", "removed"},
                    {"remaining_undos", it->second.size()}};
    return r;
  }
  auto current = (*fs)->read_file(path);
  if (!current)
    return fs_failure(path, current.error());
  auto before = *last.before;
  auto w = (*fs)->write_file(path, before, last.version_after);
  if (!w)
    return w.error().code == errc::conflict ? changed()
                                            : fs_failure(path, w.error());
  it->second.pop_back();
  // The file now holds what the edit before the undone one left; the
  // rewrite gave it a new version, which that edit's undo must expect.
  if (!it->second.empty()) {
    auto now_st = (*fs)->stat(path);
    it->second.back().version_after = now_st ? now_st->version : std::string{};
  }
  // The snippet shows the lines that differ between the undone content and
  // the restored one.
  auto now = split_lines(*current);
  auto then = split_lines(before);
  size_t prefix = 0;
  while (prefix < now.size() && prefix < then.size()
         && now[prefix] == then[prefix])
    ++prefix;
  size_t suffix = 0;
  while (suffix < now.size() - prefix && suffix < then.size() - prefix
         && now[now.size() - 1 - suffix] == then[then.size() - 1 - suffix])
    ++suffix;
  auto first = prefix + 1;
  auto last_line = then.size() - suffix;
  r.text = fmt::format(
    "Last edit of {} undone ({} can still be undone). "
    "Here's the result of running `cat -n` on a snippet "
    "of {}:\n{}",
    show_path(path), plural(it->second.size(), "earlier edit", "earlier edits"),
    show_path(path), snippet(before, first, last_line));
  r.structured
    = {{"command", "undo_edit"}, {"path", show_path(path)},
       {"restored", "content"},  {"remaining_undos", it->second.size()},
       {"first_line", first},    {"last_line", last_line}};
  return r;
}

} // namespace sandbox::actors::detail
