#include "sandbox/process/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/detail/tsan.hpp"
#include "sandbox/process/process_tree.hpp"
#include "sandbox/process/reaper.hpp"

namespace sandbox {

namespace asio = boost::asio;

namespace {

/// The id of a write nobody waits for (a terminal's end of file).
constexpr uint64_t unreported_write = ~uint64_t{0};

} // namespace

result<std::shared_ptr<child_process>>
child_process::start(reactor& r, const launch_spec& spec) {
  auto launched = launch(spec);
  if (!launched) {
    // The execution's cgroup was made for this child alone; the session's
    // goes too if nothing else of the session ever ran (made again, cheaply,
    // at its next execution).
    if (!spec.cgroup.empty() && ::rmdir(spec.cgroup.c_str()) == 0) {
      auto session = spec.cgroup.substr(0, spec.cgroup.rfind('/'));
      if (::rmdir(session.c_str()) == 0)
        cgroup_tree::prune(session);
    }
    return launched.error();
  }
  auto& c = *launched;
  std::shared_ptr<child_process> self{new child_process(r, c.pid)};
  self->cgroup_ = spec.cgroup;
  if (spec.cgroup_held && spec.cgroup_reuse) {
    self->cgroup_held_ = spec.cgroup_held;
    self->cgroup_reuse_ = spec.cgroup_reuse;
  }
  self->out_.fd.assign(c.stdout_r.release());
  self->out_.fd.non_blocking(true);
  if (c.stderr_r) {
    self->err_.fd.assign(c.stderr_r.release());
    self->err_.fd.non_blocking(true);
  } else {
    // A terminal: one stream, which ends when the last holder of the
    // terminal's peer closes it (the master's read fails with EIO).
    self->err_.eof = true;
    self->terminal_ = true;
  }
  if (c.stdin_w) {
    self->stdin_.assign(c.stdin_w.release());
    self->stdin_.non_blocking(true);
  }
  self->pidfd_.assign(c.pidfd.release());
  self->watch_listener_ = std::move(c.watch_listener);
  return self;
}

void child_process::activate(child_events events) {
  // On the caller's thread, not posted: no reactor thread wakes up for it.
  // Everything the strand's handlers read is set before the first
  // operation starts; after that each operation's handlers touch only
  // their own stream (or the exit), and the ones that read two (the end
  // of a stream, the exit) read state that only the strand writes.
  events_ = std::move(events);
  if (!events_.on_output) {
    // Kept here, within the cap: nothing waits for a grant.
    for (auto& k : kept_)
      k = std::make_unique<capped_output>(events_.keep_cap);
    out_.credit = err_.credit = std::numeric_limits<int>::max();
  }
  start_read(stream_kind::out);
  start_read(stream_kind::err);
  watch_exit();
}

child_process::child_process(reactor& r, pid_t pid)
  : strand_(asio::make_strand(r.executor())),
    pid_(pid),
    out_(strand_),
    err_(strand_),
    stdin_(strand_),
    pidfd_(strand_),
    linger_(strand_) {
}

child_process::~child_process() {
  // Destruction terminates the child: a child never outlives its owner.
  if (!reaped_ && pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    // SIGKILL cannot be caught; the reap is immediate unless the child sits
    // in uninterruptible sleep. Nobody learns the status: a failure (the
    // kernel reaped an ignored SIGCHLD's child) changes nothing here.
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR)
      ;
    release();
  }
}

void child_process::release() {
  // After the reap, never before: until then the pid is ours and no other
  // child can reuse it, and the reaper must not steal the zombie.
  if (owned_)
    reaper::release_owned(pid_, group_watched_);
  // The execution's cgroup goes with its last process; a background
  // descendant still in it keeps it (EBUSY) until the session's stop. One
  // that a pool may reuse is its owner's to give back (`return_cgroup`).
  if (!cgroup_.empty() && !cgroup_reuse_)
    ::rmdir(cgroup_.c_str());
}

void child_process::return_cgroup() {
  if (cgroup_reuse_)
    cgroup_reuse_->give_back(std::move(cgroup_held_));
}

namespace {

/// The largest pipe this process may make: `max_read_size`, or less where
/// /proc/sys/fs/pipe-max-size says so.
int max_pipe_size() {
  static const int size = [] {
    long limit = 0;
    std::string text;
    if (read_small_file("/proc/sys/fs/pipe-max-size", text))
      limit = std::strtol(text.c_str(), nullptr, 10);
    auto want = static_cast<long>(child_process::max_read_size);
    return static_cast<int>(limit > 0 ? std::min(limit, want) : want);
  }();
  return size;
}

} // namespace

namespace {

/// Where the reactor thread reads a quiet stream (`read_size` bytes, made
/// at its first read): one buffer per reactor thread, not two per child.
/// The bytes are copied out in the same handler.
char* staging() {
  thread_local std::unique_ptr<char[]> buf;
  if (!buf)
    buf.reset(new char[child_process::read_size]);
  return buf.get();
}

} // namespace

void child_process::start_read(stream_kind stream) {
  auto& r = reader(stream);
  if (r.reading || r.eof || r.credit <= 0 || !r.fd.is_open())
    return;
  r.reading = true;
  if (r.full) {
    // The last read filled its buffer: the pipe may hold more, which no
    // new wake-up would announce. Read again at once, in a handler of its
    // own (the other stream and the exit get their turns).
    asio::post(strand_, [self = shared_from_this(), stream] {
      self->on_ready(stream, {});
    });
    return;
  }
  // Waits, then reads: no speculative read of an empty pipe, and no
  // buffer held while the child is quiet.
  r.fd.async_wait(asio::posix::stream_descriptor::wait_read,
                  [self = shared_from_this(),
                   stream](boost::system::error_code ec) {
                    self->on_ready(stream, ec);
                  });
}

void child_process::on_ready(stream_kind stream, boost::system::error_code ec) {
  auto& r = reader(stream);
  if (ec) {
    on_read(stream, ec, nullptr, 0);
    return;
  }
  // A busy stream reads into its own large buffer, a quiet one into the
  // reactor thread's.
  if (r.full && !r.big)
    r.big.reset(new char[max_read_size]);
  auto* buf = r.big ? r.big.get() : staging();
  ssize_t n;
  do
    n = ::read(r.fd.native_handle(), buf, r.size());
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    // No bytes (another wake-up took them, or the last full read took
    // the last ones): quiet again, holding no buffer; wait.
    r.full = false;
    r.big.reset();
    r.reading = false;
    start_read(stream);
    return;
  }
  if (n < 0) {
    on_read(stream,
            boost::system::error_code{errno, boost::system::system_category()},
            nullptr, 0);
    return;
  }
  on_read(stream, {}, buf, static_cast<size_t>(n));
}

void child_process::on_read(stream_kind stream, boost::system::error_code ec,
                            const char* data, size_t n) {
  auto& r = reader(stream);
  r.reading = false;
  if (ec || n == 0) {
    finish_stream(stream);
    return;
  }
  if (auto& kept = kept_[stream == stream_kind::out ? 0 : 1]) {
    kept->append(std::string_view{data, n});
  } else {
    --r.credit;
    if (events_.on_output)
      events_.on_output(stream, std::string(data, n));
  }
  // A read that filled its buffer makes the stream a busy one: the next
  // read comes at once, into `max_read_size` bytes, from a pipe grown as
  // far (`F_SETPIPE_SZ`, best effort: a user over its pipe quota keeps the
  // pipe it has). A read that did not fill it drained the pipe: the
  // stream is quiet again and lets its large buffer go (the bytes were
  // copied out above).
  r.full = n == r.size();
  if (r.full && !r.grown) {
    r.grown = true;
    (void) ::fcntl(r.fd.native_handle(), F_SETPIPE_SZ, max_pipe_size());
  }
  if (!r.full)
    r.big.reset();
  if (r.draining) {
    r.drain_left -= std::min(r.drain_left, n);
    if (r.drain_left == 0) {
      finish_stream(stream);
      return;
    }
  }
  start_read(stream);
}

void child_process::finish_stream(stream_kind stream) {
  auto& r = reader(stream);
  if (r.eof)
    return;
  r.eof = true;
  boost::system::error_code ignored;
  r.fd.close(ignored);
  if (out_.eof && err_.eof)
    linger_.cancel();
  maybe_report_finished();
}

void child_process::maybe_report_finished() {
  if (!status_ || !out_.eof || !err_.eof || !events_.on_finished)
    return;
  kept_output k;
  if (kept_[0])
    k = kept_output::take(*kept_[0], *kept_[1]);
  // Once: the callback goes with its call.
  auto report = std::move(events_.on_finished);
  events_.on_finished = nullptr;
  // Both streams and the exit watch are closed by now; stdin may not be (a
  // child that exits before reading it all).
  closed_at_report_.store(!stdin_.is_open(), std::memory_order_release);
  report(std::move(*status_), std::move(k));
}

void child_process::grant(stream_kind stream) {
  asio::post(strand_, [self = shared_from_this(), stream] {
    ++self->reader(stream).credit;
    self->start_read(stream);
  });
}

void child_process::watch_exit() {
  pidfd_.async_wait(asio::posix::stream_descriptor::wait_read,
                    [self = shared_from_this()](boost::system::error_code ec) {
                      if (ec == asio::error::operation_aborted)
                        return;
                      self->on_pidfd_ready();
                    });
}

void child_process::on_pidfd_ready() {
  int status = 0;
  pid_t rc;
  int err = 0;
  {
    // Reaping and `signal_tree` exclude each other: a signal is sent only
    // while the leader is not reaped, when neither its pid nor its process
    // group id can belong to anyone else.
    std::lock_guard<std::mutex> guard{reap_mutex_};
    while ((rc = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR)
      ;
    err = errno;
    reaped_ = rc != 0;
  }
  if (rc == 0) {
    watch_exit();
    return;
  }
  // Reaped, or gone for good (waitpid failed): either way it is not ours
  // to reap any more.
  release();
  boost::system::error_code ignored;
  pidfd_.close(ignored);
  result<int> outcome = status;
  if (rc != pid_)
    outcome = make_errno_error(
      err, fmt::format("cannot collect the exit status of process {}: "
                       "waitpid",
                       pid_));
  status_ = std::move(outcome);
  // A background descendant may hold the pipes open for as long as it
  // lives: the report waits for it no longer than the linger time. (The
  // ends of the streams usually come just after the exit; the timer is
  // then cancelled.)
  linger_then_close(events_.linger);
  maybe_report_finished();
}

void child_process::write_stdin(uint64_t id, std::string data) {
  // The bytes came in a message from the thread that filled them.
  detail::tsan_acquire(data.data());
#ifdef SANDBOX_TSAN
  // Bytes a remote client sent were written by CAF's deserializer, which
  // TSan does not see; a copy made here, on the actor's thread, is ordered
  // before the strand's write by the post.
  std::string copy{data};
  data.swap(copy);
#endif
  asio::post(strand_,
             [self = shared_from_this(), id, data = std::move(data)]() mutable {
               if (!self->stdin_.is_open() || self->close_stdin_after_writes_) {
                 if (self->events_.on_stdin_written)
                   self->events_.on_stdin_written(id, EPIPE);
                 return;
               }
               self->writes_.push_back({id, std::move(data)});
               self->pump_stdin();
             });
}

void child_process::pump_stdin() {
  if (writing_)
    return;
  if (writes_.empty()) {
    if (close_stdin_after_writes_) {
      boost::system::error_code ignored;
      stdin_.close(ignored);
    }
    return;
  }
  writing_ = true;
  auto& w = writes_.front();
  asio::async_write(
    stdin_, asio::buffer(w.data),
    [self = shared_from_this()](boost::system::error_code ec, size_t) {
      self->writing_ = false;
      auto done = std::move(self->writes_.front());
      self->writes_.erase(self->writes_.begin());
      if (self->events_.on_stdin_written && done.id != unreported_write)
        self->events_.on_stdin_written(done.id, ec ? ec.value() : 0);
      if (ec) {
        // The child closed its stdin: fail every queued write the same way.
        for (auto& w : self->writes_)
          if (self->events_.on_stdin_written && w.id != unreported_write)
            self->events_.on_stdin_written(w.id, ec.value());
        self->writes_.clear();
        boost::system::error_code ignored;
        self->stdin_.close(ignored);
        return;
      }
      self->pump_stdin();
    });
}

void child_process::close_stdin() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->terminal_) {
      // A terminal stays open: end of file is its EOF character (^D), as
      // typed, after the pending writes; nobody is told of this write.
      struct termios t;
      char eof = '\x04';
      if (self->stdin_.is_open()
          && ::tcgetattr(self->stdin_.native_handle(), &t) == 0)
        eof = static_cast<char>(t.c_cc[VEOF]);
      self->writes_.push_back({unreported_write, std::string(1, eof)});
      self->pump_stdin();
      return;
    }
    self->close_stdin_after_writes_ = true;
    self->pump_stdin();
  });
}

void child_process::linger_then_close(std::chrono::milliseconds delay) {
  if (out_.eof && err_.eof)
    return;
  linger_.expires_after(delay);
  linger_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec)
      return;
    self->finish_after_drain(stream_kind::out);
    self->finish_after_drain(stream_kind::err);
  });
}

void child_process::finish_after_drain(stream_kind stream) {
  auto& r = reader(stream);
  if (r.eof || r.draining)
    return;
  // What the pipe holds now was written before the linger ended: it is
  // output of the execution and reaches the sink (at the sink's pace), so
  // nothing is lost to a slow reader. Only what is written later (by a
  // background job that keeps writing) is cut off.
  int pending = 0;
  if (!r.fd.is_open() || ::ioctl(r.fd.native_handle(), FIONREAD, &pending) != 0
      || pending <= 0) {
    finish_stream(stream);
    return;
  }
  r.draining = true;
  r.drain_left = static_cast<size_t>(pending);
  start_read(stream);
}

void child_process::resize(terminal_size size) {
  asio::post(strand_, [self = shared_from_this(), size] {
    // The master stays open as the stdin's descriptor after the output
    // ended (a background job may still hold the terminal).
    auto& fd = self->stdin_.is_open() ? self->stdin_ : self->out_.fd;
    if (!self->terminal_ || !fd.is_open())
      return;
    struct winsize ws = {};
    ws.ws_row = size.rows;
    ws.ws_col = size.cols;
    // The kernel sends SIGWINCH to the terminal's foreground group.
    (void) ::ioctl(fd.native_handle(), TIOCSWINSZ, &ws);
  });
}

void child_process::signal_tree(int sig) const noexcept {
  std::lock_guard<std::mutex> guard{reap_mutex_};
  if (pid_ <= 0 || reaped_)
    return;
  if (::kill(-pid_, sig) != 0)
    ::kill(pid_, sig);
  // Until the reap the cgroup is the child's alone (no other execution is
  // born in it): its members are the child's descendants, whatever group
  // or session they moved to.
  if (!cgroup_.empty())
    for (auto pid : cgroup_members(cgroup_))
      if (pid != pid_)
        ::kill(pid, sig);
}

void child_process::shutdown() {
  // The finished report was the strand's last use of this object (what
  // may still run there, a cancelled linger, touches nothing else).
  if (closed_at_report_.load(std::memory_order_acquire))
    return;
  asio::post(strand_, [self = shared_from_this()] {
    self->events_ = child_events{};
    boost::system::error_code ignored;
    self->out_.fd.close(ignored);
    self->err_.fd.close(ignored);
    self->stdin_.close(ignored);
    self->pidfd_.close(ignored);
    self->linger_.cancel();
    // The last reference may now drop; the destructor kills and reaps a
    // child that is still running.
  });
}

} // namespace sandbox
