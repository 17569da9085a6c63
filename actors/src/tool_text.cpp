#include "tool_text.hpp"

#include <fmt/format.h>

#include "sandbox/utf8_splitter.hpp"

namespace sandbox::actors::detail {

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

std::string numbered(const std::vector<std::string_view>& lines,
                     size_t begin, size_t end, size_t first) {
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

} // namespace sandbox::actors::detail
