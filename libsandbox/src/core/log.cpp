#include "sandbox/log.hpp"

#include <mutex>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace sandbox::log {

std::shared_ptr<spdlog::logger> logger() {
  if (auto found = spdlog::get(logger_name))
    return found;
  // Two threads may both find none: one creates it, the other takes it.
  static std::mutex mtx;
  std::lock_guard<std::mutex> guard{mtx};
  if (auto found = spdlog::get(logger_name))
    return found;
  try {
    // Quiet unless asked: warnings and errors only, as the CLI's default.
    auto made = spdlog::stderr_color_mt(logger_name);
    made->set_level(spdlog::level::warn);
    return made;
  } catch (const spdlog::spdlog_ex&) {
    // Registered meanwhile by the embedder.
    if (auto found = spdlog::get(logger_name))
      return found;
    throw;
  }
}

} // namespace sandbox::log
