#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

class reactor;
class lookup_server;

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
/// A denied directory is covered instead, where the node may serve FUSE
/// (`lookup_watch()`), by a file system of the node's that also refuses and
/// reports every name looked up below it (lookup_server.hpp); elsewhere
/// by an empty directory, where such a lookup opens nothing and fails with
/// `ENOENT`, unreported.
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

    /// Denied directory -> the detached mount (a descriptor, owned by the
    /// cover) to move over it instead of a placeholder.
    const std::map<std::string, int>& mounts() const noexcept {
      return mounts_;
    }

    /// Names the session whose opens of the node's shared placeholders
    /// (those of denied files) this cover reports: the one whose PID
    /// namespace is that of `init` (its PID 1), or one nested in it. Until
    /// then, such opens are refused unreported.
    void bind(pid_t init);

  private:
    friend class read_guard;
    cover() = default;
    std::weak_ptr<read_guard> guard_;
    std::string directory_;
    std::map<std::string, std::string> placeholders_;
    std::map<std::string, int> mounts_;
    /// The served file systems: their ids and their mounts (owned).
    std::vector<uint64_t> served_;
    std::vector<unique_fd> mount_fds_;
    std::vector<std::pair<dev_t, ino_t>> keys_;
    /// Each marked placeholder and whether it is a directory.
    std::vector<std::pair<std::string, bool>> marked_;
    /// The report of opens of shared placeholders, and the PID namespace
    /// (inode) it was bound to; 0: not bound.
    std::shared_ptr<std::function<void(denied_read)>> report_;
    ino_t pid_ns_ = 0;
  };

  /// Whether this process can hold a guard (probed once; thread-safe).
  static bool available();

  /// Whether its covers of denied directories also refuse and report the
  /// names looked up below them (the node may serve FUSE; probed once,
  /// thread-safe).
  static bool lookup_watch();

  /// Makes the fanotify group and starts watching it on `r`; with
  /// `lookups` and `lookup_watch()` also the thread that serves the covers
  /// of denied directories (without, they are placeholders too). Errors:
  /// `unsupported` naming the failed call.
  static result<std::shared_ptr<read_guard>> start(reactor& r,
                                                   bool lookups = true);

  ~read_guard();
  read_guard(const read_guard&) = delete;
  read_guard& operator=(const read_guard&) = delete;

  /// The placeholders of one session's denied paths (missing paths are
  /// skipped). A file gets the node's one empty file for that path, made
  /// and marked by the first cover that needs it (in a directory below
  /// `parent` that lives as long as the guard) and shared by every
  /// session: its opens are told apart by the opener's PID namespace
  /// (`cover::bind`). A directory gets a private empty directory below
  /// `parent` (the session's init makes mount points in it), marked; with
  /// `lookup_watch()` a mount instead, in which the directories leading to
  /// each of `keep` inside it exist (their mount points). `report` runs on
  /// a reactor thread for every refused open or lookup, before the reader
  /// continues.
  result<std::unique_ptr<cover>>
  make_cover(const std::string& parent, const std::vector<std::string>& deny,
             std::function<void(denied_read)> report,
             const std::vector<std::string>& keep = {});

private:
  struct entry {
    std::string path;
    /// Null for a shared placeholder: the opener's session reports.
    std::shared_ptr<std::function<void(denied_read)>> report;
  };
  struct watcher;

  read_guard() = default;
  /// Unmarks and forgets what `c` placed (so that it can be removed: the
  /// node's own opens would be refused too).
  void forget(const cover& c);
  /// Called for each event of the group, on a reactor thread.
  void on_open(int fd, pid_t pid);
  /// The shared placeholder of the denied file `path`, made and marked at
  /// the first call (below `parent`).
  result<std::string> shared_file(const std::string& parent,
                                  const std::string& path);
  /// The report of the session `pid` belongs to (its PID namespace or the
  /// closest bound one above it); null: none.
  std::shared_ptr<std::function<void(denied_read)>> session_of(pid_t pid);

  int group_ = -1;
  std::shared_ptr<watcher> watcher_;
  /// Serves the file systems over denied directories (with
  /// `lookup_watch()`; lookup_server.hpp).
  std::unique_ptr<lookup_server> lookups_;
  std::mutex mtx_;
  std::map<std::pair<dev_t, ino_t>, entry> entries_;
  /// The shared placeholders: denied file -> placeholder, in `shared_dir_`.
  std::map<std::string, std::string> shared_;
  std::string shared_dir_;
  /// Bound covers: PID namespace inode -> the session's report.
  std::map<ino_t, std::weak_ptr<std::function<void(denied_read)>>> sessions_;
};

} // namespace sandbox
