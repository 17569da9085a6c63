#include "interrupt.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>

namespace sandbox::cli {

namespace {

std::mutex mtx;
std::function<void()> handler;
std::atomic<int> first_signal{0};

sigset_t interrupt_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
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
      int none = 0;
      first_signal.compare_exchange_strong(none, sig);
      // Called under the lock: the guard (and what its handler refers to)
      // cannot go away meanwhile.
      std::lock_guard<std::mutex> guard{mtx};
      if (handler)
        handler();
      else
        _exit(128 + first_signal.load());
    }
  }}.detach();
}

int interrupted_by() {
  return first_signal.load();
}

void forget_interrupt() {
  first_signal.store(0);
}

interrupt_guard::interrupt_guard(std::function<void()> on_interrupt) {
  std::lock_guard<std::mutex> guard{mtx};
  previous_ = std::exchange(handler, std::move(on_interrupt));
}

interrupt_guard::~interrupt_guard() {
  std::lock_guard<std::mutex> guard{mtx};
  handler = std::move(previous_);
}

} // namespace sandbox::cli
