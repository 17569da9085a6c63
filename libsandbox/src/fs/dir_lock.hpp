#pragma once

// A lock on one open directory that serialises the commits (check version,
// rename) and removals of every writer of that directory, across threads
// and processes alike: flock(2) locks belong to an open file description,
// so two opens of one directory exclude each other even in one process,
// and the kernel drops the lock when its holder dies.

#include <string>
#include <string_view>

#include "sandbox/errc.hpp"

namespace sandbox::fs::detail {

class dir_lock {
public:
  /// Takes an exclusive flock on `dir_fd`, waiting up to 10 s for another
  /// holder. A file system that cannot lock directories (some network file
  /// systems) yields a lock that is not `held()`: the caller then goes on
  /// without mutual exclusion.
  ///
  /// Errors: `timeout` when the lock stays held by someone else for 10 s
  /// (e.g. a stopped process); the message names `abs` and `verb`.
  static result<dir_lock> acquire(int dir_fd, const std::string& abs,
                                  std::string_view verb);

  dir_lock(dir_lock&& other) noexcept;
  dir_lock& operator=(dir_lock&&) = delete;
  dir_lock(const dir_lock&) = delete;
  dir_lock& operator=(const dir_lock&) = delete;

  /// Releases the lock. The directory descriptor must still be open.
  ~dir_lock();

  bool held() const noexcept {
    return fd_ >= 0;
  }

private:
  explicit dir_lock(int fd) noexcept : fd_(fd) {
  }

  /// The locked descriptor (owned by the caller), -1 when not held.
  int fd_ = -1;
};

} // namespace sandbox::fs::detail
