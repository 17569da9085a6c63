// The `view` command of file_editor: numbered lines of a file, or the
// entries up to two levels below a directory.

#include "tool_file_editor.hpp"

#include <fmt/format.h>

#include "tool_text.hpp"

namespace sandbox::actors::detail {

using nlohmann::json;

tool_result file_editor::view(const std::string& path, const json& args) {
  auto fs = files();
  if (!fs)
    return fs_failure(path, fs.error());
  auto st = (*fs)->stat(path);
  if (!st)
    return fs_failure(path, st.error());
  bool is_dir = st->kind == fs::file_kind::dir;
  if (st->kind == fs::file_kind::symlink) {
    // A link to a directory is viewed as the directory.
    auto target = (*fs)->stat(path + "/");
    is_dir = target && target->kind == fs::file_kind::dir;
  }
  if (is_dir) {
    if (args.contains("view_range"))
      return tool_failure("invalid_parameter",
                          fmt::format("Parameter `view_range` is not allowed "
                                      "when path is a directory: {} is a "
                                      "directory.",
                                      show_path(path)));
    return view_directory(path);
  }
  std::optional<tool_result> failure;
  auto file = load(path, true, failure);
  if (!file)
    return std::move(*failure);
  auto lines = split_lines(file->content);
  auto total = lines.size();
  int64_t first = 1;
  int64_t last = static_cast<int64_t>(total);
  if (auto vr = args.find("view_range"); vr != args.end()) {
    auto a = (*vr)[0].get<int64_t>();
    auto b = (*vr)[1].get<int64_t>();
    auto range = fmt::format("[{}, {}]", a, b);
    auto has = total == 0
                 ? fmt::format("{} is empty (0 lines)", show_path(path))
                 : fmt::format("{} has {}", show_path(path),
                               plural(total, "line", "lines"));
    if (a < 1 || a > static_cast<int64_t>(total))
      return tool_failure("out_of_range",
                          fmt::format("Invalid view_range {}: the first line "
                                      "{} is out of range; {}.",
                                      range, a, has));
    if (b != -1 && b < a)
      return tool_failure("out_of_range",
                          fmt::format("Invalid view_range {}: the last line "
                                      "{} is before the first line {} (use "
                                      "-1 for the end of the file).",
                                      range, b, a));
    if (b > static_cast<int64_t>(total))
      return tool_failure("out_of_range",
                          fmt::format("Invalid view_range {}: the last line "
                                      "{} is past the end; {} (use -1 for "
                                      "the end of the file).",
                                      range, b, has));
    first = a;
    last = b == -1 ? static_cast<int64_t>(total) : b;
  }
  tool_result r;
  std::string body;
  auto shown_last = first - 1;
  bool cut = false;
  for (auto i = first; i <= last; ++i) {
    auto line = numbered(lines, i - 1, i, i);
    if (body.size() + line.size() > opts_.max_view_bytes && i > first) {
      cut = true;
      break;
    }
    body += line;
    shown_last = i;
  }
  if (total == 0)
    r.text = fmt::format("{} is empty.\n", show_path(path));
  else
    r.text = fmt::format("Here's the result of running `cat -n` on {}:\n{}",
                         show_path(path), body);
  if (cut)
    r.text += fmt::format("[view cut after line {} of {} (over {} bytes): "
                          "use view_range [{}, {}] to see the rest]\n",
                          shown_last, total, opts_.max_view_bytes,
                          shown_last + 1, last);
  std::string content;
  for (auto i = first; i <= shown_last; ++i) {
    content.append(lines[i - 1].data(), lines[i - 1].size());
    if (static_cast<size_t>(i) < total || file->content.back() == '\n')
      content += '\n';
  }
  r.structured = {{"command", "view"},
                  {"path", show_path(path)},
                  {"kind", "file"},
                  {"total_lines", total},
                  {"start_line", total == 0 ? 0 : first},
                  {"end_line", shown_last},
                  {"truncated", cut},
                  {"content", std::move(content)}};
  return r;
}

tool_result file_editor::view_directory(const std::string& path) {
  auto fs = files();
  if (!fs)
    return fs_failure(path, fs.error());
  auto hidden = [](const std::string& rel) {
    if (rel.empty() || rel.front() == '.')
      return true;
    return rel.find("/.") != std::string::npos;
  };
  std::string listing;
  json entries = json::array();
  size_t count = 0;
  auto root = path == "/" ? std::string{} : path;
  auto summary = (*fs)->list(path, 2, [&](const fs::frame& f) {
    if (hidden(f.path))
      return true;
    if (++count > opts_.max_dir_entries)
      return true;
    auto abs = to_valid_utf8(root + "/" + f.path);
    listing += abs;
    if (f.kind == fs::file_kind::dir)
      listing += '/';
    else if (f.kind == fs::file_kind::symlink)
      listing += " (symlink)";
    listing += '\n';
    entries.push_back(
      {{"path", abs}, {"kind", fs::to_string(f.kind)}, {"size", f.size}});
    return true;
  });
  if (summary.error)
    return fs_failure(path, *summary.error);
  tool_result r;
  r.text = fmt::format("Here are the files and directories up to 2 levels "
                       "below {}, hidden entries excluded:\n{}/\n{}",
                       show_path(path), to_valid_utf8(root), listing);
  bool cut = count > opts_.max_dir_entries;
  if (cut)
    r.text += fmt::format("[{} more entries not shown: view a subdirectory "
                          "or use the shell tool]\n",
                          count - opts_.max_dir_entries);
  r.structured = {{"command", "view"},      {"path", show_path(path)},
                  {"kind", "directory"},    {"entries", std::move(entries)},
                  {"total_entries", count}, {"truncated", cut}};
  return r;
}

} // namespace sandbox::actors::detail
