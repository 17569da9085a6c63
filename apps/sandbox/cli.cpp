// The CLI's global option help, input, and the values of options.

#include "cli.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "sandbox/validation.hpp"

namespace sandbox::cli {

const char* const global_options_footer
  = "Global options (before or after the subcommand): --json (one JSON "
    "object per line, errors too), --log-level LEVEL, --node HOST:PORT, "
    "--session ID, --tls-cert/--tls-key/--tls-ca FILE. See `sandbox "
    "--help`.";

// -- input ------------------------------------------------------------------

result<size_t> read_full(int fd, std::string& buf, std::string_view what,
                         bool whole) {
  size_t used = 0;
  while (used < buf.size() && (whole || used == 0)) {
    auto n = ::read(fd, buf.data() + used, buf.size() - used);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return make_errno_error(errno, fmt::format("cannot read {}", what));
    if (n == 0)
      break;
    used += static_cast<size_t>(n);
  }
  return used;
}

// -- option values ------------------------------------------------------------

result<std::pair<std::string, std::string>>
parse_env_entry(const std::string& entry) {
  auto eq = entry.find('=');
  if (eq == std::string::npos)
    return error{errc::invalid_argument,
                 fmt::format("--env expects NAME=VALUE, got {}",
                             quote_for_message(entry))};
  auto name = entry.substr(0, eq);
  if (!is_valid_env_name(name))
    return error{errc::invalid_argument,
                 fmt::format("--env: invalid environment variable name: {} "
                             "(expected [A-Za-z_][A-Za-z0-9_]*)",
                             quote_for_message(name))};
  return std::make_pair(name, entry.substr(eq + 1));
}

result<std::chrono::milliseconds> parse_timeout(const std::string& text) {
  return parse_seconds("--timeout", text);
}

result<std::chrono::milliseconds> parse_seconds(std::string_view option,
                                                const std::string& text) {
  auto bad = [&] {
    return error{errc::invalid_argument,
                 fmt::format("{} expects seconds from 0 to {:.0f} "
                             "(fractions allowed, 0 = none), got {}",
                             option, max_timeout_seconds,
                             quote_for_message(text))};
  };
  // strtod also takes "inf", "nan" and hex; only plain decimals pass.
  if (text.empty()
      || text.find_first_not_of("0123456789.eE+-") != std::string::npos)
    return bad();
  errno = 0;
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE
      || !std::isfinite(seconds) || seconds < 0
      || seconds > max_timeout_seconds)
    return bad();
  auto ms = static_cast<int64_t>(std::ceil(seconds * 1000.0));
  return std::chrono::milliseconds{ms};
}

result<uint64_t> parse_integer(std::string_view option, const std::string& text,
                               uint64_t lo, uint64_t hi) {
  auto bad = [&] {
    return error{errc::invalid_argument,
                 fmt::format("{} expects an integer from {} to {}, got {}",
                             option, lo, hi, quote_for_message(text))};
  };
  if (text.empty() || text.size() > 20
      || text.find_first_not_of("0123456789") != std::string::npos)
    return bad();
  errno = 0;
  auto value = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value < lo || value > hi)
    return bad();
  return static_cast<uint64_t>(value);
}

} // namespace sandbox::cli
