#pragma once

// Text helpers of the tools: UTF-8 checks, numbered lines (`cat -n`) and
// the result of a failed tool.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/tools/tools.hpp"

namespace sandbox::actors::detail {

/// The offset of the first byte of `s` that is not part of valid UTF-8,
/// or nullopt when `s` is valid UTF-8.
std::optional<size_t> invalid_utf8_at(std::string_view s) noexcept;

/// `s` with every byte that is not part of valid UTF-8 replaced by U+FFFD,
/// so that it can be stored in a JSON string and dumped.
std::string to_valid_utf8(std::string_view s);

/// The lines of `text` without their '\n' (a last line without one counts;
/// the empty text has no lines).
std::vector<std::string_view> split_lines(std::string_view text);

/// Lines as `cat -n` prints them: the number right-aligned in 6 columns, a
/// tab, the line; `first` is the number of `lines[0]`. Invalid UTF-8
/// becomes U+FFFD.
std::string numbered(const std::vector<std::string_view>& lines, size_t begin,
                     size_t end, size_t first);

/// The result of a tool that failed: `text` is `message`, `structured` is
/// `{"error": code, "message": message}`.
tool_result tool_failure(std::string_view code, std::string message);

/// A path as it appears in a message (invalid UTF-8 as U+FFFD).
std::string show_path(const std::string& path);

/// "1 line", "2 lines".
std::string plural(size_t n, std::string_view one, std::string_view many);

/// The 1-based line on which byte `pos` of `content` lies.
size_t line_of(std::string_view content, size_t pos);

/// How many lines `text` spans (a final '\n' ends a line, it does not
/// start one).
size_t line_count(std::string_view text);

/// Why `text` is not text ("NUL byte at offset N", "invalid UTF-8 at
/// offset N"), or nullopt when it is.
std::optional<std::string> binary_reason(std::string_view text);

/// A `binary_file` failure when the argument `name` holds `text` that is
/// not text ("file_text holds a NUL byte at offset 3: ..."), else nullopt.
std::optional<tool_result> refuse_binary(std::string_view name,
                                         std::string_view text);

/// Numbered lines `first..last` (1-based) of `content` with 4 lines of
/// context around them; an empty region (`last < first`) shows the context
/// around where it was; a region over 40 lines shows its first and last 16.
std::string snippet(std::string_view content, size_t first, size_t last);

/// The failure of a filesystem request on `path`: `The path P does not
/// exist (...)` for `path_not_found`, else `P: MESSAGE`; the code is the
/// error's name.
tool_result fs_failure(const std::string& path, const error& err);

} // namespace sandbox::actors::detail
