#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "sandbox/execution.hpp"
#include "sandbox/io/reactor.hpp"
#include "sandbox/output/capped_output.hpp"
#include "sandbox/process/launcher.hpp"

namespace sandbox {

class reaper;

/// Receives what a child does. Every callback runs on a reactor thread and
/// must not block; the actor layer turns each call into a message.
///
/// The end is told once (`on_finished`: the exit, after both streams
/// ended). The output goes to `on_output` as it arrives (streamed, or read
/// while the child runs); or, for an execution nobody streams (no
/// `on_output`), the reactor keeps it itself and hands it over with the
/// report, so such an execution costs one message however much it prints.
struct child_events {
  /// A piece of output. At most `window` pieces per stream are delivered
  /// before `child_process::grant` is called for that stream (backpressure).
  std::function<void(stream_kind, std::string)> on_output;
  /// A stdin write finished; `err` is 0 or an errno value.
  std::function<void(uint64_t id, int err)> on_stdin_written;
  /// Called once, when the child was reaped and both streams ended (every
  /// `on_output` call came before), with the raw wait status. When the
  /// status cannot be collected (waitpid fails, e.g. because the host
  /// process sets SIGCHLD to SIG_IGN and the kernel reaped the child
  /// itself), an `io_error` naming the pid and the errno: never a status
  /// made up in its place. Without `on_output`, also with the output kept
  /// (`keep_cap` bytes per stream at most, see `capped_output`), and
  /// reading never waits for a grant; with it, the output is empty. A
  /// background descendant that still holds the pipes after the child's
  /// exit holds the report back for at most `linger`: then each stream
  /// gives what its pipe held and closes.
  std::function<void(result<int> status, kept_output output)> on_finished;
  uint64_t keep_cap = 0;
  std::chrono::milliseconds linger{0};
};

/// One running child on the shared reactor: its pipes are read
/// asynchronously, its exit is watched through a pidfd. All state is owned by
/// the strand; the public functions post onto it and are thread-safe.
///
/// The child is reaped exactly once, by the exit watch or, if it is still
/// running when the last reference drops, by the destructor (after SIGKILL
/// to its group). A child started under `reaper::launch_owned` is released
/// from the reaper's registry of owned children at that reap.
class child_process : public std::enable_shared_from_this<child_process> {
public:
  /// Bytes read from a pipe at a time, at first. A stream whose read
  /// fills the buffer is a busy one: its pipe grows to `max_read_size`
  /// (`F_SETPIPE_SZ`, as far as the system allows) and so do its reads, so
  /// large outputs cost fewer reads and fewer messages per MiB. A read
  /// that does not fill its buffer drained the pipe: the stream is quiet
  /// again, and a quiet stream holds no buffer of its own.
  static constexpr size_t read_size = 64 * 1024;
  static constexpr size_t max_read_size = 1024 * 1024;

  /// Output pieces in flight per stream before reading pauses.
  static constexpr int window = 4;

  /// Launches `spec` on `r`; nothing is read until `activate`.
  /// Errors: those of `launch`.
  static result<std::shared_ptr<child_process>> start(reactor& r,
                                                      const launch_spec& spec);

  /// Starts reading the pipes and watching the exit; `events` receives
  /// everything from now on. Once, from the owner's thread (never a
  /// handler of this child), before any other call: it starts the
  /// operations there, without a post to the strand.
  void activate(child_events events);

  ~child_process();

  pid_t pid() const noexcept {
    return pid_;
  }

  /// The cgroup the child was born in (`launch_spec::cgroup`); empty in
  /// the process-group mode. Removed, if empty, once the child is reaped;
  /// held open with a `launch_spec::cgroup_reuse`, its owner gives it back
  /// instead (`return_cgroup`).
  const std::string& cgroup() const noexcept {
    return cgroup_;
  }

  /// After the reap, when nothing ends the child's tree from outside (a
  /// cancel's kill stage could otherwise meet the next execution born in
  /// the cgroup): gives the cgroup to `launch_spec::cgroup_reuse`, which
  /// keeps it if it is empty. Thread-safe; call once.
  void return_cgroup();

  /// The listener of a contained command's seccomp filter (see
  /// `launched_child::watch_listener`), handed over once; empty otherwise.
  unique_fd take_watch_listener() noexcept {
    return std::move(watch_listener_);
  }

  /// Allows one more output piece of `stream` to be delivered.
  void grant(stream_kind stream);

  /// Writes `data` to the child's stdin; `on_stdin_written(id, err)` follows.
  void write_stdin(uint64_t id, std::string data);

  /// Closes the child's stdin (after pending writes). A terminal stays
  /// open: its end-of-file character (^D) is written instead.
  void close_stdin();

  /// Whether the child runs on a terminal (`launch_spec::terminal`): its
  /// output is one stream, `stream_kind::out` here.
  bool has_terminal() const noexcept {
    return terminal_;
  }

  /// Sets the size of the child's terminal (the kernel sends SIGWINCH to
  /// its foreground process group); nothing without a terminal.
  void resize(terminal_size size);

  /// Sends `sig` to the child's whole process group (to the child alone if
  /// the group is gone) and to every other process of the child's cgroup
  /// (`launch_spec::cgroup`; none in the process-group mode), so that
  /// descendants that left its group (a job of a shell with job control, a
  /// `setsid`) get it too. Nothing once the child has been reaped: never to
  /// a pid, group id or cgroup that the system may have given to another.
  void signal_tree(int sig) const noexcept;

  /// Drops all callbacks and closes every descriptor, so that the strand
  /// holds no reference to this object any more. It does not kill the
  /// child: the destructor does, whenever the last reference drops (a
  /// child still running then gets SIGKILL to its group and is reaped).
  /// After the finished report of a child with no stdin left open it posts
  /// nothing: every descriptor is closed already, and the callbacks go with
  /// the object.
  void shutdown();

private:
  struct pipe_reader {
    explicit pipe_reader(
      boost::asio::strand<boost::asio::io_context::executor_type>& strand)
      : fd(strand) {
    }
    boost::asio::posix::stream_descriptor fd;
    /// `max_read_size` bytes while the stream is busy (`full`); null
    /// otherwise: a quiet stream is read on readiness into the reactor
    /// thread's buffer (`staging`), so that an idle child holds no buffer.
    std::unique_ptr<char[]> big;
    /// The last read filled its buffer: more may be in the pipe without a
    /// new wake-up, so the next read comes at once.
    bool full = false;
    /// The pipe was grown (once, at the first full read).
    bool grown = false;
    size_t size() const noexcept {
      return big ? max_read_size : read_size;
    }
    int credit = window;
    bool reading = false;
    bool eof = false;
    /// The linger ended while output was still in the pipe (unread because
    /// the sink was slow): only those `drain_left` bytes are read, then
    /// the stream closes.
    bool draining = false;
    size_t drain_left = 0;
  };

  friend class reaper;

  child_process(reactor& r, pid_t pid);
  /// Releases the pid from the reaper's registry once it is reaped.
  void release();
  void start_read(stream_kind stream);
  /// A quiet stream is readable (or failed): reads it into `staging`.
  void on_ready(stream_kind stream, boost::system::error_code ec);
  /// `n` bytes at `data` came from `stream` (or the stream ended: `ec` set
  /// or `n` 0).
  void on_read(stream_kind stream, boost::system::error_code ec,
               const char* data, size_t n);
  /// The linger ended: closes `stream` now, or once what its pipe holds
  /// was read.
  void finish_after_drain(stream_kind stream);
  /// At the exit: closes both streams after `delay` unless they end
  /// first.
  void linger_then_close(std::chrono::milliseconds delay);
  void finish_stream(stream_kind stream);
  /// Reports once the child was reaped and both streams ended.
  void maybe_report_finished();
  void watch_exit();
  void on_pidfd_ready();
  void pump_stdin();
  pipe_reader& reader(stream_kind s) {
    return s == stream_kind::out ? out_ : err_;
  }

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  pid_t pid_;
  std::string cgroup_;
  std::shared_ptr<const held_cgroup> cgroup_held_;
  std::shared_ptr<cgroup_pool> cgroup_reuse_;
  unique_fd watch_listener_;
  child_events events_;
  /// The output kept when nobody streams (no `on_output`); null
  /// otherwise.
  std::unique_ptr<capped_output> kept_[2];
  /// The status, once reaped.
  std::optional<result<int>> status_;
  pipe_reader out_;
  pipe_reader err_;
  boost::asio::posix::stream_descriptor stdin_;
  boost::asio::posix::stream_descriptor pidfd_;
  boost::asio::steady_timer linger_;
  struct pending_write {
    uint64_t id;
    std::string data;
  };
  std::vector<pending_write> writes_;
  bool writing_ = false;
  bool close_stdin_after_writes_ = false;
  /// Set on the strand just before the finished report when no descriptor
  /// is left open: `shutdown` has nothing to do on the strand.
  std::atomic<bool> closed_at_report_{false};
  /// Guards `reaped_` so that the reap and `signal_tree`, which runs on
  /// any thread, never interleave (see `on_pidfd_ready`).
  mutable std::mutex reap_mutex_;
  bool reaped_ = false;
  /// Registered by `reaper::launch_owned` before the object is shared
  /// (and its group watched by the watchdog, or not).
  bool owned_ = false;
  bool group_watched_ = false;
  bool terminal_ = false;
};

} // namespace sandbox
