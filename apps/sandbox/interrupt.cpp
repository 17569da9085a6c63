#include "interrupt.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <fmt/format.h>

namespace sandbox::cli {

namespace {

std::mutex mtx;
std::function<void()> handler;
/// Set: SIGHUP calls it instead of interrupting.
std::function<void()> hangup;
/// Whether an interrupt `handler` takes starts the deadline.
bool bounded = true;
std::atomic<int> first_signal{0};

sigset_t interrupt_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

/// How long the CLI waits, after the first interrupt a guard took, for
/// the command to end and its session to stop: `interrupt_deadline`, or
/// SANDBOX_INTERRUPT_DEADLINE seconds (1 to 3600) where that is set.
std::chrono::seconds deadline() {
  const char* v = std::getenv("SANDBOX_INTERRUPT_DEADLINE");
  if (v != nullptr && *v != '\0') {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 1 && n <= 3600)
      return std::chrono::seconds{n};
  }
  return interrupt_deadline;
}

/// Started once, at the first interrupt a guard took: if the CLI still
/// runs at the deadline (a node that never answers the cancel, or never
/// ends the command), it says so on stderr and exits with 128 + the
/// signal, without the command's result.
void start_deadline() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::thread{[limit = deadline()] {
      std::this_thread::sleep_for(limit);
      auto line = fmt::format("sandbox: interrupted: the command did not end "
                              "within {} s of the interrupt; exiting without "
                              "its result (it may still run on the node)\n",
                              limit.count());
      (void) !::write(2, line.data(), line.size());
      _exit(128 + first_signal.load());
    }}.detach();
  });
}

} // namespace

void install_interrupt_handling() {
  auto set = interrupt_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread{[set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0)
        continue;
      if (sig == SIGHUP) {
        std::lock_guard<std::mutex> guard{mtx};
        if (hangup) {
          hangup();
          continue;
        }
      }
      int none = 0;
      first_signal.compare_exchange_strong(none, sig);
      // Called under the lock: the guard (and what its handler refers to)
      // cannot go away meanwhile.
      std::lock_guard<std::mutex> guard{mtx};
      if (!handler)
        _exit(128 + first_signal.load());
      // Before the handler: a cancel sent to a node that never answers
      // would otherwise hold this thread, and the CLI, for good.
      if (bounded)
        start_deadline();
      handler();
    }
  }}.detach();
}

void on_hangup(std::function<void()> f) {
  std::lock_guard<std::mutex> guard{mtx};
  hangup = std::move(f);
}

int interrupted_by() {
  return first_signal.load();
}

void forget_interrupt() {
  first_signal.store(0);
}

interrupt_guard::interrupt_guard(std::function<void()> on_interrupt,
                                 bool with_deadline) {
  std::lock_guard<std::mutex> guard{mtx};
  previous_ = std::exchange(handler, std::move(on_interrupt));
  previous_bounded_ = std::exchange(bounded, with_deadline);
}

interrupt_guard::~interrupt_guard() {
  std::lock_guard<std::mutex> guard{mtx};
  handler = std::move(previous_);
  bounded = previous_bounded_;
}

} // namespace sandbox::cli
