#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sandbox/errc.hpp"

namespace sandbox {

/// Quotes `word` for a POSIX shell so that the shell reads it back as exactly
/// one word holding exactly these bytes: the result is `'...'` with every
/// embedded `'` written as `'\''`; the empty word becomes `''`. Nothing inside
/// single quotes is special to sh (`$`, backticks, `\`, `*`, `~`, newlines
/// and non-ASCII bytes all stay literal), and every word is quoted, even a
/// harmless one, so the output is predictable.
/// @returns `invalid_argument` if `word` holds a NUL byte, which no shell
///   word can contain: `cannot shell-quote a NUL byte (offset N)`.
result<std::string> shell_quote(std::string_view word);

/// Quotes every word of `words` with `shell_quote` and joins them with single
/// spaces, so that sh splits the result back into exactly `words`. An empty
/// list gives the empty string.
/// @returns `invalid_argument` naming the first word with a NUL byte:
///   `cannot shell-quote word I: NUL byte at offset N` (I counts from 0).
result<std::string> shell_join(const std::vector<std::string>& words);

} // namespace sandbox
