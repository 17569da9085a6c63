#pragma once

// A fork in a test that runs code of its own in the child (no exec at once).

#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <dirent.h>

namespace sandbox::test {

/// Returns once every other thread of this process waits in a futex (at
/// most after 10 s). Call it before a fork whose child allocates: the test
/// runner starts a watchdog thread with each test, which allocates while it
/// starts; a fork meanwhile would leave the child an allocator lock held
/// for ever (AddressSanitizer's allocator in clang 14 takes no lock around
/// fork: a child hung in its first malloc).
inline void until_other_threads_wait() {
  auto self = std::to_string(::syscall(SYS_gettid));
  auto futex = std::to_string(SYS_futex);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    bool quiet = true;
    if (DIR* d = ::opendir("/proc/self/task")) {
      while (auto* e = ::readdir(d)) {
        std::string tid = e->d_name;
        if (tid == "." || tid == ".." || tid == self)
          continue;
        std::string call;
        std::ifstream{"/proc/self/task/" + tid + "/syscall"} >> call;
        if (!call.empty() && call != futex)
          quiet = false; // running, or in another call
      }
      ::closedir(d);
    }
    if (quiet || std::chrono::steady_clock::now() > deadline)
      return;
    std::this_thread::yield();
  }
}

/// `fork()` once every other thread waits (see above).
inline pid_t quiet_fork() {
  until_other_threads_wait();
  return ::fork();
}

} // namespace sandbox::test
