#include "sandbox/validation.hpp"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cctype>

#include <fmt/format.h>

namespace sandbox {

namespace {

/// Bytes of a long input that `quote_for_message` keeps.
constexpr size_t shortened_input = 64;

bool is_ascii_alpha(char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

bool is_ascii_digit(char c) noexcept {
  return c >= '0' && c <= '9';
}

error invalid_argument(std::string message) {
  return error{errc::invalid_argument, std::move(message)};
}

} // namespace

std::string escape(std::string_view in, escape_style style) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(in.size());
  bool ascii = style == escape_style::ascii;
  for (char c : in) {
    auto byte = static_cast<unsigned char>(c);
    bool control = byte < 0x20 || byte == 0x7F;
    if (c == '\\' || (ascii && c == '"')) {
      out += '\\';
      out += c;
    } else if (!ascii && c == '\n') {
      out += "\\n";
    } else if (!ascii && c == '\t') {
      out += "\\t";
    } else if (control || (ascii && byte >= 0x80)) {
      out += "\\x";
      out += hex[byte >> 4];
      out += hex[byte & 0x0F];
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_for_message(std::string_view in) {
  return escape(in, escape_style::ascii);
}

std::string quote_for_message(std::string_view in) {
  if (in.size() <= message_input_limit)
    return fmt::format("\"{}\"", escape_for_message(in));
  // A megabyte-long key would drown the message; its start and its length
  // are enough to find it.
  return fmt::format("\"{}\"... ({} bytes)",
                     escape_for_message(in.substr(0, shortened_input)),
                     in.size());
}

bool is_valid_env_name(std::string_view name) noexcept {
  if (name.empty() || !(is_ascii_alpha(name[0]) || name[0] == '_'))
    return false;
  for (char c : name.substr(1))
    if (!(is_ascii_alpha(c) || is_ascii_digit(c) || c == '_'))
      return false;
  return true;
}

size_t max_argument_bytes() noexcept {
  // The kernel defines MAX_ARG_STRLEN as PAGE_SIZE * 32 and exports it
  // nowhere; sysconf gives the page size of this machine.
  constexpr size_t pages = 32;
  constexpr long usual_page = 4096;
  auto page = ::sysconf(_SC_PAGESIZE);
  return static_cast<size_t>(page > 0 ? page : usual_page) * pages;
}

result<void> validate_env(const env_map& env) {
  for (const auto& [key, value] : env) {
    if (!is_valid_env_name(key))
      return invalid_argument(fmt::format(
        "invalid environment variable name: {}", quote_for_message(key)));
    if (auto pos = value.find('\0'); pos != std::string::npos)
      return invalid_argument(
        fmt::format("invalid value of environment variable {}: NUL byte at "
                    "offset {}",
                    quote_for_message(key), pos));
    // `key=value` and its NUL travel as one string.
    auto bytes = key.size() + value.size() + 2;
    if (bytes > max_argument_bytes())
      return invalid_argument(
        fmt::format("environment variable {} is {} bytes, over the kernel's "
                    "limit of {} bytes for one string (MAX_ARG_STRLEN)",
                    quote_for_message(key), bytes, max_argument_bytes()));
  }
  return {};
}

result<void> validate_language(std::string_view language) {
  auto valid_char = [](char c) {
    return is_ascii_alpha(c) || is_ascii_digit(c) || c == '.' || c == '_'
           || c == '-';
  };
  bool valid = !language.empty();
  for (char c : language)
    valid = valid && valid_char(c);
  if (!valid)
    return invalid_argument(
      fmt::format("invalid language: {}", quote_for_message(language)));
  return {};
}

result<void> validate_command(std::string_view command) {
  // execve takes NUL-terminated strings: a NUL would silently cut the
  // command short, so refuse it instead of running something else.
  if (auto pos = command.find('\0'); pos != std::string_view::npos)
    return invalid_argument(
      fmt::format("invalid command: NUL byte at offset {}", pos));
  // Counted with its NUL, as the kernel does.
  if (command.size() + 1 > max_argument_bytes())
    return invalid_argument(
      fmt::format("invalid command: {} bytes, over the kernel's limit of {} "
                  "bytes for one argument (MAX_ARG_STRLEN)",
                  command.size() + 1, max_argument_bytes()));
  return {};
}

result<int> parse_signal(std::string_view text) {
  if (!text.empty() && text.size() <= 3
      && text.find_first_not_of("0123456789") == std::string_view::npos) {
    auto n = std::stoi(std::string{text});
    if (n <= SIGRTMAX)
      return n;
  }
  std::string name;
  for (char c : text)
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0)
    name.erase(0, 3);
  for (int sig = 1; sig < NSIG && !name.empty(); ++sig)
    if (auto* abbrev = ::sigabbrev_np(sig); abbrev != nullptr && name == abbrev)
      return sig;
  return error{errc::invalid_argument,
               fmt::format("unknown signal {} (a name such as TERM, KILL, "
                           "INT, HUP, or a number up to {})",
                           quote_for_message(text), SIGRTMAX)};
}

} // namespace sandbox
