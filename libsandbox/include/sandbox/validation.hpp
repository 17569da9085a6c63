#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"

namespace sandbox {

/// Inputs longer than this many bytes are shortened by `quote_for_message`.
constexpr size_t message_input_limit = 256;

/// How `escape` writes the bytes of a text.
enum class escape_style {
  /// For an input quoted in an error message: printable ASCII stays as is,
  /// `"` and `\` get a backslash, every other byte (control bytes, NUL,
  /// newline, DEL, any byte >= 0x80) becomes `\xNN`. The result is plain
  /// ASCII, safe to print or to embed in JSON.
  ascii,
  /// For a line of terminal output: `\` becomes `\\`, newline `\n`, tab
  /// `\t`, other control bytes and DEL `\xNN`; every other byte (UTF-8
  /// included) is kept, so the text stays on one line and readable.
  control,
};

/// Returns `in` escaped in `style`.
std::string escape(std::string_view in, escape_style style);

/// `escape(in, escape_style::ascii)`.
std::string escape_for_message(std::string_view in);

/// Returns `in` escaped and in double quotes, e.g. `"a\x0Ab"`. An input longer
/// than `message_input_limit` bytes is cut to its first 64 bytes and marked
/// after the closing quote: `"AAAA"... (100000 bytes)`.
std::string quote_for_message(std::string_view in);

/// Checks an environment variable name against §3:
/// `^[A-Za-z_][A-Za-z0-9_]*$` (ASCII only; the empty name is invalid).
bool is_valid_env_name(std::string_view name) noexcept;

/// Returns the kernel's limit on the size of one argument or one
/// `NAME=value` environment string of `execve`, terminating NUL included
/// (`MAX_ARG_STRLEN`: 32 pages, 128 KiB with 4 KiB pages). A longer string
/// makes the launch fail with E2BIG whatever the total size.
size_t max_argument_bytes() noexcept;

/// Checks every name of `env` (§3) and every value.
/// @returns nothing on success.
/// @returns `invalid_argument` naming the first bad key in map order:
///   `invalid environment variable name: "<key>"`; for a value that holds a
///   NUL byte (it cannot travel through `environ`),
///   `invalid value of environment variable "<key>": NUL byte at offset N`;
///   for an entry longer than `max_argument_bytes()`,
///   `environment variable "<key>" is N bytes, over the kernel's limit of M
///   bytes for one string (MAX_ARG_STRLEN)`.
result<void> validate_env(const env_map& env);

/// Checks a language name of `execute_code` against §7:
/// `^[A-Za-z0-9._-]+$`.
/// @returns `invalid_argument` with `invalid language: "<language>"`.
result<void> validate_language(std::string_view language);

/// Checks that `command` can be passed to `sh -c` as one argument: it holds
/// no NUL byte and fits `max_argument_bytes()`. The empty command is valid
/// (sh runs nothing).
/// @returns `invalid_argument` with
///   `invalid command: NUL byte at offset N`, or
///   `invalid command: N bytes, over the kernel's limit of M bytes for one
///   argument (MAX_ARG_STRLEN)`.
result<void> validate_command(std::string_view command);

/// A signal by name (`TERM`, `SIGTERM`, `term`) or number (0 to SIGRTMAX).
/// @returns `invalid_argument` with `unknown signal "<text>" (a name such
///   as TERM, KILL, INT, HUP, or a number)`.
result<int> parse_signal(std::string_view text);

} // namespace sandbox
