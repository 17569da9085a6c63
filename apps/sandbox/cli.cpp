// The CLI's global option help, input, and the values of options.

#include "cli.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "sandbox/actors/runtime_config.hpp"
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

result<uint64_t> parse_size(std::string_view option, const std::string& text) {
  auto bad = [&] {
    return error{errc::invalid_argument,
                 fmt::format("{} expects a size in bytes with an optional "
                             "suffix K, M, G or T (e.g. 512M, 2G; 0 = none), "
                             "got {}",
                             option, quote_for_message(text))};
  };
  auto digits = text.find_first_not_of("0123456789");
  if (digits == 0 || text.empty())
    return bad();
  std::string_view suffix;
  if (digits != std::string::npos)
    suffix = std::string_view{text}.substr(digits);
  unsigned shift = 0;
  if (!suffix.empty()) {
    switch (suffix.front()) {
      case 'k':
      case 'K':
        shift = 10;
        break;
      case 'm':
      case 'M':
        shift = 20;
        break;
      case 'g':
      case 'G':
        shift = 30;
        break;
      case 't':
      case 'T':
        shift = 40;
        break;
      default:
        return bad();
    }
    suffix.remove_prefix(1);
    if (!suffix.empty() && suffix != "B" && suffix != "iB")
      return bad();
  }
  auto number = parse_integer(option, text.substr(0, digits), 0,
                              UINT64_MAX >> shift);
  if (!number)
    return bad();
  return *number << shift;
}

std::string global_options::limit_flags::first_given() const {
  if (!given_empty.empty())
    return given_empty;
  for (auto [name, text] :
       {std::pair{"--memory", &memory}, std::pair{"--pids", &pids},
        std::pair{"--cpu", &cpu}, std::pair{"--tmp-size", &tmp_size},
        std::pair{"--max-connections", &max_connections}})
    if (!text->empty())
      return name;
  return {};
}

result<std::optional<isolation_limits>>
parse_limits(const global_options::limit_flags& flags) {
  if (flags.first_given().empty())
    return std::optional<isolation_limits>{};
  if (!flags.given_empty.empty())
    return error{errc::invalid_argument,
                 fmt::format("{} expects a value, got \"\"",
                             flags.given_empty)};
  auto limits = actors::default_contained_limits();
  auto size = [](std::string_view option, const std::string& text,
                 uint64_t& out) -> result<void> {
    if (text.empty())
      return {};
    auto v = parse_size(option, text);
    if (!v)
      return v.error();
    out = *v;
    return {};
  };
  auto integer = [](std::string_view option, const std::string& text,
                    uint64_t hi, uint64_t& out) -> result<void> {
    if (text.empty())
      return {};
    auto v = parse_integer(option, text, 0, hi);
    if (!v)
      return v.error();
    out = *v;
    return {};
  };
  if (auto ok = size("--memory", flags.memory, limits.memory); !ok)
    return ok.error();
  if (auto ok = integer("--pids", flags.pids, 4194304, limits.processes); !ok)
    return ok.error();
  if (auto ok = integer("--cpu", flags.cpu, 1u << 30, limits.cpu_seconds); !ok)
    return ok.error();
  if (auto ok = size("--tmp-size", flags.tmp_size, limits.tmp_size); !ok)
    return ok.error();
  if (auto ok = integer("--max-connections", flags.max_connections, 1u << 20,
                        limits.max_connections);
      !ok)
    return ok.error();
  return std::optional<isolation_limits>{limits};
}

} // namespace sandbox::cli
