#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "sandbox/errc.hpp"
#include "sandbox/read_guard.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

class reactor;

/// The process group of `pid`, as this process's /proc shows it; 0 when it
/// cannot be read.
pid_t process_group_of(pid_t pid);

/// What covers one denied directory in a contained session where the node
/// may serve FUSE (docs/security.md, "Violations"): a file system of the
/// node's, answered on the read guard's own thread (never the reactor,
/// which looks paths up in a session's view itself), mounted over the
/// denied path. Unlike an
/// empty directory it sees every name a command looks up below it: such a
/// lookup is refused with `EPERM` and reported (`<denied>/<name>`), and so
/// is an open (a listing) of the denied directory itself. The directories
/// that lead to a kept directory inside it (the session's own working
/// directory and home, mounted back over them) exist, empty, and may be
/// listed. The node's own requests (its file operations) are answered as an
/// empty directory's would be, and not reported.
///
/// The file system is made by the node (`fsopen` and `fsmount`, so every
/// pid in its requests is one of the node's PID namespace) as a detached
/// mount, which the session's init moves over the denied path
/// (`mount_fd`). Closing it (`close`) ends the connection: a request still
/// waiting fails, nothing can hang on it any more.
class denied_directory : public std::enable_shared_from_this<denied_directory> {
public:
  using report_fn = std::function<void(denied_read)>;

  /// Whether this process can serve one (`/dev/fuse` opens and the kernel
  /// knows `fuse`; probed once, thread-safe).
  static bool available();

  /// Makes the file system for `path` with the directories leading to each
  /// of `keep` that lies inside it, and starts answering it on `r`. Errors:
  /// `unsupported` naming the failed call.
  static result<std::shared_ptr<denied_directory>>
  make(reactor& r, std::string path, const std::vector<std::string>& keep,
       std::shared_ptr<report_fn> report);

  /// The detached mount (close-on-exec) to move over the denied path.
  int mount_fd() const noexcept {
    return mount_.get();
  }

  /// Ends the connection and closes both descriptors (on its own thread,
  /// where its reads run; returns once they are closed).
  void close();

  denied_directory(const denied_directory&) = delete;
  denied_directory& operator=(const denied_directory&) = delete;

private:
  struct node {
    /// Relative to the denied directory ("" for itself).
    std::string path;
    std::map<std::string, uint64_t> children;
  };

  denied_directory(reactor& r, int dev);

  void wait();
  void drain();
  void answer(const char* request, size_t size);
  void reply(uint64_t unique, int error, const void* data = nullptr,
             size_t size = 0);
  /// Whether the request came from one of this process's threads.
  bool own(uint32_t pid) const;
  void refuse(uint32_t pid, const std::string& relative);

  boost::asio::io_context::executor_type exec_;
  boost::asio::posix::stream_descriptor dev_;
  unique_fd mount_;
  std::string path_;
  std::shared_ptr<report_fn> report_;
  /// Node ids are indices + 1 (1 is the root, as FUSE wants).
  std::vector<node> nodes_;
  pid_t self_;
};

} // namespace sandbox
