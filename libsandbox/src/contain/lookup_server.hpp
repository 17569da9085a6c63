#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox/contain/read_guard.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

/// The process group of `pid`, as this process's /proc shows it; 0 when it
/// cannot be read.
pid_t process_group_of(pid_t pid);

/// Serves what covers the denied directories of contained sessions where
/// the node may serve FUSE (docs/security.md, "Violations"): one small file
/// system per denied directory, mounted over it in the session's mount
/// namespace. Unlike an empty directory it sees every name a command looks
/// up below it: such a lookup is refused with `EPERM` and reported
/// (`<denied>/<name>`), and so is an open (a listing) of the denied
/// directory itself. The directories that lead to a kept directory inside
/// it (the session's own working directory and home, mounted back over
/// them) exist, empty, and may be listed. The node's own requests (its
/// file operations, the seccomp watch's path checks) are answered as an
/// empty directory's would be, and not reported.
///
/// One thread answers every file system of the node, and it has a
/// descriptor table of its own (`unshare(CLONE_FILES)`) that holds the
/// only descriptors of `/dev/fuse`: when the node is killed, that thread's
/// end closes them, which ends every connection, so a thread of the node
/// that waited for an answer (the kernel makes such a wait uninterruptible
/// once the request was read) is released and the node can end. Had the
/// node's shared table held them, that thread would keep them open, and
/// the node could never end. The answering thread therefore uses no other
/// descriptor of the node's: it reports each refusal over a socket to a
/// second thread, which runs the report and acknowledges it before the
/// command's request is answered.
///
/// The file systems are made by the answering thread (`fsopen` and
/// `fsmount`, so every pid in their requests is one of the node's PID
/// namespace) as detached mounts, handed over to the caller, whose
/// session's init moves one over its denied path.
class lookup_server {
public:
  using report_fn = std::function<void(denied_read)>;

  /// Whether this process can serve them (`/dev/fuse` opens and the kernel
  /// knows `fuse`; probed once, thread-safe).
  static bool available();

  /// Starts both threads. Errors: `unsupported` naming the failed call.
  static result<std::unique_ptr<lookup_server>> start();

  /// Ends every file system still served and joins both threads.
  ~lookup_server();

  lookup_server(const lookup_server&) = delete;
  lookup_server& operator=(const lookup_server&) = delete;

  /// One file system served for a denied directory.
  struct made {
    uint64_t id = 0;
    /// The detached mount (close-on-exec) to move over the denied path.
    unique_fd mount;
  };

  /// Makes the file system for `path`, in which the directories leading to
  /// each of `keep` that lies inside it exist; `report` runs on the
  /// reporting thread for every refusal, before the reader continues.
  /// Thread-safe. Errors: `unsupported` naming the failed call.
  result<made> make(const std::string& path,
                    const std::vector<std::string>& keep,
                    std::shared_ptr<report_fn> report);

  /// Ends the file system `id`: a request still waiting fails
  /// (`ENOTCONN`), and so does every later one. Thread-safe.
  void close(uint64_t id);

private:
  lookup_server() = default;
  void report_loop();

  /// The node's ends of the two socket pairs (the server thread holds the
  /// others, in its own table).
  unique_fd control_;
  unique_fd reports_;
  std::thread server_;
  std::thread reporter_;
  /// One `make` at a time: its request and answer are a pair.
  std::mutex make_mtx_;
  uint64_t next_id_ = 1;
  std::mutex reports_mtx_;
  std::map<uint64_t, std::shared_ptr<report_fn>> reports_to_;
};

} // namespace sandbox
