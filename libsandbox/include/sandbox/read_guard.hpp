#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/errc.hpp"

namespace sandbox {

class reactor;

/// A read of a denied path that a read guard refused.
struct denied_read {
  /// The process that opened it, and its process group, as the node sees
  /// them (both read while the process still waited for the answer).
  pid_t pid = 0;
  pid_t pgid = 0;
  /// The denied path, as the node configuration names it.
  std::string path;
};

/// Refuses and reports the reads of denied paths in contained sessions
/// (docs/security.md, "Violations"). A denied path is mounted over, in the
/// session's mount namespace, by a placeholder of the node's: an empty file
/// or an empty directory. The guard holds a fanotify group with an
/// open-permission mark on every placeholder, watched on the reactor: an
/// open of one by another process is answered "denied" (the caller gets
/// `EPERM`) and reported; this process's own opens (the node's file
/// operations) see it as it is, empty.
/// Looking a name up below a placeholder directory opens nothing, so that
/// (`ENOENT`) is refused but not reported.
///
/// Needs `CAP_SYS_ADMIN` (fanotify permission events); where the node lacks
/// it, `start` fails and denied paths are only hidden.
class read_guard : public std::enable_shared_from_this<read_guard> {
public:
  /// One session's placeholders: removed with it, after which their opens
  /// are no longer reported (nothing can open them any more once the
  /// session's mount namespace is gone).
  class cover {
  public:
    ~cover();
    cover(const cover&) = delete;
    cover& operator=(const cover&) = delete;

    /// Denied path -> the placeholder to mount over it.
    const std::map<std::string, std::string>& placeholders() const noexcept {
      return placeholders_;
    }

  private:
    friend class read_guard;
    cover() = default;
    std::weak_ptr<read_guard> guard_;
    std::string directory_;
    std::map<std::string, std::string> placeholders_;
    std::vector<std::pair<dev_t, ino_t>> keys_;
    /// Each marked placeholder and whether it is a directory.
    std::vector<std::pair<std::string, bool>> marked_;
  };

  /// Whether this process can hold a guard (probed once; thread-safe).
  static bool available();

  /// Makes the fanotify group and starts watching it on `r`. Errors:
  /// `unsupported` naming the failed call.
  static result<std::shared_ptr<read_guard>> start(reactor& r);

  ~read_guard();
  read_guard(const read_guard&) = delete;
  read_guard& operator=(const read_guard&) = delete;

  /// A private directory below `parent` with one placeholder per existing
  /// path of `deny` (an empty file for a file, an empty directory for a
  /// directory; missing paths are skipped), each marked. `report` runs on a
  /// reactor thread for every refused open, before the opener continues.
  result<std::unique_ptr<cover>>
  make_cover(const std::string& parent, const std::vector<std::string>& deny,
             std::function<void(denied_read)> report);

private:
  struct entry {
    std::string path;
    std::shared_ptr<std::function<void(denied_read)>> report;
  };
  struct watcher;

  read_guard() = default;
  /// Unmarks and forgets what `c` placed (so that it can be removed: the
  /// node's own opens would be refused too).
  void forget(const cover& c);
  /// Called for each event of the group, on a reactor thread.
  void on_open(int fd, pid_t pid);

  int group_ = -1;
  std::shared_ptr<watcher> watcher_;
  std::mutex mtx_;
  std::map<std::pair<dev_t, ino_t>, entry> entries_;
};

} // namespace sandbox
