#pragma once

#include <functional>

namespace sandbox::cli {

/// Blocks SIGINT, SIGTERM and SIGHUP in every thread and starts the one
/// thread that waits for them. Call first thing in main, before any other
/// thread exists.
void install_interrupt_handling();

/// While alive, an interrupt calls `on_interrupt` (e.g. cancel the running
/// command, which then ends with its result) instead of exiting with 130.
class interrupt_guard {
public:
  explicit interrupt_guard(std::function<void()> on_interrupt);
  ~interrupt_guard();
  interrupt_guard(const interrupt_guard&) = delete;
  interrupt_guard& operator=(const interrupt_guard&) = delete;
};

} // namespace sandbox::cli
