#pragma once

#include <chrono>
#include <functional>

namespace sandbox::cli {

/// How long the CLI waits after an interrupt for the command to end and
/// its session to stop (the node's answer to the cancel, the stop's
/// receipt) before it exits anyway with 128 + the signal, saying so on
/// stderr. SANDBOX_INTERRUPT_DEADLINE (seconds, 1 to 3600) overrides it.
/// Longer than a stop takes on a node that answers (its stop plan's grace,
/// kill and verify stages).
constexpr std::chrono::seconds interrupt_deadline{30};

/// Blocks SIGINT, SIGTERM and SIGHUP in every thread and starts the one
/// thread that waits for them. Call in main before any other thread exists.
/// Without an `interrupt_guard`, such a signal ends the CLI at once with
/// 128 + its number.
void install_interrupt_handling();

/// From now on SIGHUP calls `f` (on the signal thread) instead of
/// interrupting; an empty `f` puts the interrupt back.
void on_hangup(std::function<void()> f);

/// The first of SIGINT, SIGTERM or SIGHUP received (0: none). The CLI then
/// exits with 128 + this number.
int interrupted_by();

/// Forgets the interrupt received, for a command whose normal end is an
/// interrupt (`serve` exits 0 once SIGTERM or SIGINT stopped it).
void forget_interrupt();

/// While alive, an interrupt calls `on_interrupt` (e.g. cancel the running
/// command, which then ends with its result) instead of exiting, and starts
/// the `interrupt_deadline`. The call
/// happens under a lock the destructor also takes: once the guard is gone,
/// its handler is neither running nor called again. Guards nest: the
/// destructor puts back the handler of the guard that was active before.
class interrupt_guard {
public:
  /// Without `with_deadline` (serve, whose stop of every session takes as
  /// long as it takes) an interrupt starts no deadline.
  explicit interrupt_guard(std::function<void()> on_interrupt,
                           bool with_deadline = true);
  ~interrupt_guard();
  interrupt_guard(const interrupt_guard&) = delete;
  interrupt_guard& operator=(const interrupt_guard&) = delete;

private:
  std::function<void()> previous_;
  bool previous_bounded_ = true;
};

} // namespace sandbox::cli
