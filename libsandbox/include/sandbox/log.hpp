#pragma once

// The library's logger (docs/api.md, "Logging").

#include <cstdint>
#include <memory>
#include <string_view>

#include <fmt/format.h>
#include <spdlog/logger.h>

namespace sandbox::log {

/// The name under which the library looks its logger up in spdlog's
/// registry.
inline constexpr const char* logger_name = "sandbox";

/// The library's logger: the one registered with spdlog under
/// `logger_name`, or, when none is, a new one writing to stderr (never
/// stdout), registered under that name at level `warn` (change it with
/// `logger()->set_level(...)`, or with spdlog::set_level once it exists). An
/// embedder routes or silences the library's lines by registering its own
/// logger under that name before the library logs (or by dropping the one
/// the library made and registering another).
std::shared_ptr<spdlog::logger> logger();

/// What a line is about: a session, and an execution of it when `exec` is
/// not 0. Formats as "[s-<session id> e-<execution number>]", the prefix of
/// every line about a session.
struct tag {
  std::string_view session;
  uint64_t exec = 0;
};

} // namespace sandbox::log

template <>
struct fmt::formatter<sandbox::log::tag> {
  constexpr auto parse(format_parse_context& ctx) {
    return ctx.begin();
  }
  template <class Context>
  auto format(const sandbox::log::tag& t, Context& ctx) const {
    if (t.exec == 0)
      return fmt::format_to(ctx.out(), "[s-{}]", t.session);
    return fmt::format_to(ctx.out(), "[s-{} e-{}]", t.session, t.exec);
  }
};
