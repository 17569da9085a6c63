#pragma once

// Text helpers of the tools: UTF-8 checks, numbered lines (`cat -n`) and
// the result of a failed tool.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/actors/tools.hpp"

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
std::string numbered(const std::vector<std::string_view>& lines,
                     size_t begin, size_t end, size_t first);

/// The result of a tool that failed: `text` is `message`, `structured` is
/// `{"error": code, "message": message}`.
tool_result tool_failure(std::string_view code, std::string message);

} // namespace sandbox::actors::detail
