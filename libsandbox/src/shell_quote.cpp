#include "sandbox/shell_quote.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace sandbox {

namespace {

/// Appends the quoted form of `word` to `out`; `word` holds no NUL byte.
void append_quoted(std::string_view word, std::string& out) {
  // Inside single quotes nothing is special except the closing quote itself,
  // so an embedded quote ends the quoted part, adds an escaped quote and
  // opens a new quoted part.
  out += '\'';
  for (auto pos = word.find('\''); pos != std::string_view::npos;
       pos = word.find('\'')) {
    out.append(word.data(), pos);
    out += "'\\''";
    word.remove_prefix(pos + 1);
  }
  out.append(word);
  out += '\'';
}

/// Returns the size of the quoted form of `word`.
size_t quoted_size(std::string_view word) {
  auto quotes = static_cast<size_t>(std::count(word.begin(), word.end(), '\''));
  return word.size() + 2 + 3 * quotes;
}

} // namespace

result<std::string> shell_quote(std::string_view word) {
  if (auto pos = word.find('\0'); pos != std::string_view::npos)
    return error{errc::invalid_argument,
                 fmt::format("cannot shell-quote a NUL byte (offset {})", pos)};
  std::string out;
  out.reserve(quoted_size(word));
  append_quoted(word, out);
  return out;
}

result<std::string> shell_join(const std::vector<std::string>& words) {
  size_t total = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    const auto& word = words[i];
    if (auto pos = word.find('\0'); pos != std::string::npos)
      return error{errc::invalid_argument,
                   fmt::format("cannot shell-quote word {}: NUL byte at "
                               "offset {}",
                               i, pos)};
    total += quoted_size(word) + 1;
  }
  std::string out;
  out.reserve(total);
  for (const auto& word : words) {
    if (!out.empty())
      out += ' ';
    append_quoted(word, out);
  }
  return out;
}

} // namespace sandbox
