#include "tool_text.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sandbox/output/utf8_splitter.hpp"

namespace sandbox::actors::detail {

namespace {

/// Lines of context a snippet shows before and after a change.
constexpr size_t snippet_context = 4;

/// A changed region longer than this many lines shows only its ends.
constexpr size_t snippet_max_region = 40;

/// Lines kept at each end of a long changed region.
constexpr size_t snippet_region_end = 16;

} // namespace

std::optional<size_t> invalid_utf8_at(std::string_view s) noexcept {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    auto n = utf8_sequence_at(s.substr(i));
    if (n == 0)
      return i;
    i += n;
  }
  return std::nullopt;
}

std::string to_valid_utf8(std::string_view s) {
  if (!invalid_utf8_at(s))
    return std::string{s};
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      out += s[i++];
      continue;
    }
    auto n = utf8_sequence_at(s.substr(i));
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(pos));
      break;
    }
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

std::string numbered(const std::vector<std::string_view>& lines, size_t begin,
                     size_t end, size_t first) {
  std::string out;
  for (size_t i = begin; i < end && i < lines.size(); ++i)
    out += fmt::format("{:>6}\t{}\n", first + (i - begin),
                       to_valid_utf8(lines[i]));
  return out;
}

tool_result tool_failure(std::string_view code, std::string message) {
  tool_result r;
  r.text = to_valid_utf8(message);
  r.structured = {{"error", code}, {"message", r.text}};
  r.is_error = true;
  return r;
}

std::string show_path(const std::string& path) {
  return to_valid_utf8(path);
}

std::string plural(size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

size_t line_of(std::string_view content, size_t pos) {
  return 1
         + static_cast<size_t>(
           std::count(content.begin(), content.begin() + pos, '\n'));
}

size_t line_count(std::string_view text) {
  return split_lines(text).size();
}

std::optional<std::string> binary_reason(std::string_view text) {
  if (auto nul = text.find('\0'); nul != std::string_view::npos)
    return fmt::format("NUL byte at offset {}", nul);
  if (auto bad = invalid_utf8_at(text))
    return fmt::format("invalid UTF-8 at offset {}", *bad);
  return std::nullopt;
}

std::optional<tool_result> refuse_binary(std::string_view name,
                                         std::string_view text) {
  auto why = binary_reason(text);
  if (!why)
    return std::nullopt;
  return tool_failure("binary_file",
                      fmt::format("{} holds a {}: file_editor writes text "
                                  "files only.",
                                  name, *why));
}

std::string snippet(std::string_view content, size_t first, size_t last) {
  auto lines = split_lines(content);
  auto n = lines.size();
  if (n == 0)
    return "(the file is now empty)\n";
  auto region_end = std::max(last, first - 1);
  auto b = std::min(n, region_end + snippet_context);
  auto a = first > snippet_context ? first - snippet_context : 1;
  a = std::max<size_t>(1, std::min(a, b));
  if (last >= first && last - first + 1 > snippet_max_region) {
    auto head_end = first + snippet_region_end - 1;
    auto tail_begin = last - snippet_region_end + 1;
    return numbered(lines, a - 1, head_end, a)
           + fmt::format("   ...\t[{} changed lines not shown]\n",
                         tail_begin - head_end - 1)
           + numbered(lines, tail_begin - 1, b, tail_begin);
  }
  return numbered(lines, a - 1, b, a);
}

tool_result fs_failure(const std::string& path, const error& err) {
  if (err.code == errc::path_not_found)
    return tool_failure(to_string(err.code),
                        fmt::format("The path {} does not exist ({}).",
                                    show_path(path), err.message));
  return tool_failure(to_string(err.code),
                      fmt::format("{}: {}", show_path(path), err.message));
}

} // namespace sandbox::actors::detail
