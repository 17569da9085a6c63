#include "fs/dir_lock.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <utility>

#include <sys/file.h>

#include <fmt/format.h>

namespace sandbox::fs::detail {

namespace {

constexpr auto max_wait = std::chrono::seconds(10);

} // namespace

result<dir_lock> dir_lock::acquire(int dir_fd, const std::string& abs,
                                   std::string_view verb) {
  // A holder keeps the lock for a few system calls only, so polling with a
  // short backoff costs little; unlike a blocking flock it cannot hang the
  // caller forever behind a holder that was stopped (SIGSTOP).
  auto deadline = std::chrono::steady_clock::now() + max_wait;
  auto pause = std::chrono::microseconds(10);
  for (;;) {
    if (::flock(dir_fd, LOCK_EX | LOCK_NB) == 0)
      return dir_lock{dir_fd};
    auto err = errno;
    if (err == EINTR)
      continue;
    if (err != EWOULDBLOCK)
      return dir_lock{-1}; // not supported here: go on without the lock
    if (std::chrono::steady_clock::now() >= deadline)
      return error{errc::timeout,
                   fmt::format("{} {}: another writer has held the lock of "
                               "its directory for {} s",
                               verb, abs, max_wait.count())};
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

dir_lock::dir_lock(dir_lock&& other) noexcept
  : fd_(std::exchange(other.fd_, -1)) {
}

dir_lock::~dir_lock() {
  if (fd_ >= 0)
    ::flock(fd_, LOCK_UN);
}

} // namespace sandbox::fs::detail
