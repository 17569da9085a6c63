#pragma once

// Runs test code at the exact moment a file is opened, by anyone (the
// session's filesystem worker included): a fanotify permission mark holds
// each open of the marked files until the test's callback has run, then
// lets it proceed. This provokes a change "between two steps" of the code
// under test as an event, not as a race or a sleep. Include after
// caf/test/unit_test.hpp.

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace sandbox::test {

/// Holds every open of the marked paths (files or directories; by inode,
/// whatever name the opener uses, O_PATH excepted) until `on_open(i)` ran
/// on the hook's thread, `i` being the index of the opened path. The
/// callback must not open a marked path itself (nothing would answer that
/// open): it uses descriptors opened before the hook. The destructor lets
/// any held open proceed.
class open_hook {
public:
  open_hook(const std::vector<std::string>& paths,
            std::function<void(size_t)> on_open)
    : on_open_(std::move(on_open)) {
    fan_ = ::fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK,
                           O_RDONLY | O_CLOEXEC | O_LARGEFILE);
    if (fan_ < 0)
      throw std::runtime_error(why("fanotify_init"));
    for (auto& p : paths) {
      struct ::stat st;
      if (::stat(p.c_str(), &st) != 0)
        fail("stat " + p);
      ids_.push_back({st.st_dev, st.st_ino});
      if (::fanotify_mark(fan_, FAN_MARK_ADD, FAN_OPEN_PERM | FAN_ONDIR,
                          AT_FDCWD, p.c_str())
          != 0)
        fail("fanotify_mark " + p);
    }
    stop_ = ::eventfd(0, EFD_CLOEXEC);
    if (stop_ < 0)
      fail("eventfd");
    thread_ = std::thread{[this] { run(); }};
  }

  ~open_hook() {
    uint64_t one = 1;
    if (::write(stop_, &one, sizeof(one)) < 0) {
      // Cannot happen for an eventfd below its maximum.
    }
    thread_.join();
    close_all();
  }

  open_hook(const open_hook&) = delete;
  open_hook& operator=(const open_hook&) = delete;

  /// Opens held (and let through) so far.
  size_t opens() const {
    return opens_;
  }

  /// Whether this host lets a test hold opens (CAP_SYS_ADMIN and a kernel
  /// with fanotify permission events); says what is missing otherwise.
  static bool available(const std::string& probe_dir) {
    try {
      open_hook probe{{probe_dir}, [](size_t) {}};
      return true;
    } catch (const std::exception& e) {
      CAF_MESSAGE(
        "skipped: this host cannot hold opens for a test: " << e.what());
      return false;
    }
  }

private:
  struct file_id {
    dev_t dev;
    ino_t ino;
  };

  static std::string why(const std::string& what) {
    return what + ": " + std::strerror(errno);
  }

  [[noreturn]] void fail(const std::string& what) {
    auto msg = why(what);
    close_all();
    throw std::runtime_error(msg);
  }

  void close_all() {
    // Closing the group lets every held open proceed.
    if (fan_ >= 0)
      ::close(fan_);
    if (stop_ >= 0)
      ::close(stop_);
    fan_ = stop_ = -1;
  }

  void run() {
    for (;;) {
      pollfd fds[2] = {{fan_, POLLIN, 0}, {stop_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR)
          continue;
        return;
      }
      if (fds[1].revents != 0)
        return;
      alignas(fanotify_event_metadata) char buf[4096];
      auto len = ::read(fan_, buf, sizeof(buf));
      if (len <= 0)
        continue;
      auto* m = reinterpret_cast<fanotify_event_metadata*>(buf);
      for (; FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
        if (m->fd < 0)
          continue;
        if ((m->mask & FAN_OPEN_PERM) != 0) {
          struct ::stat st;
          if (::fstat(m->fd, &st) == 0)
            for (size_t i = 0; i < ids_.size(); ++i)
              if (ids_[i].dev == st.st_dev && ids_[i].ino == st.st_ino)
                on_open_(i);
          ++opens_;
          fanotify_response allow{m->fd, FAN_ALLOW};
          if (::write(fan_, &allow, sizeof(allow)) < 0) {
            // Only if the group is gone, which lets the open proceed too.
          }
        }
        ::close(m->fd);
      }
    }
  }

  std::function<void(size_t)> on_open_;
  std::vector<file_id> ids_;
  int fan_ = -1;
  int stop_ = -1;
  std::atomic<size_t> opens_{0};
  std::thread thread_;
};

} // namespace sandbox::test
