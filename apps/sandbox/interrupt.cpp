#include "interrupt.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <mutex>
#include <thread>

namespace sandbox::cli {

namespace {

std::mutex mtx;
std::function<void()> handler;

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
      std::function<void()> f;
      {
        std::lock_guard<std::mutex> guard{mtx};
        f = handler;
      }
      if (f)
        f();
      else
        _exit(128 + sig);
    }
  }}.detach();
}

interrupt_guard::interrupt_guard(std::function<void()> on_interrupt) {
  std::lock_guard<std::mutex> guard{mtx};
  handler = std::move(on_interrupt);
}

interrupt_guard::~interrupt_guard() {
  std::lock_guard<std::mutex> guard{mtx};
  handler = nullptr;
}

} // namespace sandbox::cli
