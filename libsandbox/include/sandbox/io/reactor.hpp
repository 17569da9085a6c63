#pragma once

#include <signal.h>

#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace sandbox {

/// The shared I/O reactor of a node: one io_context (epoll underneath) run
/// by a small fixed pool of threads. Child pipes and exits are watched here
/// and turned into messages; no thread is ever dedicated to one child.
class reactor {
public:
  /// Starts `threads` threads running the io_context. With 0 it starts
  /// none and its owner runs `context()` itself: the flow tests do, so that
  /// every callback runs on the test's thread between two steps of CAF's
  /// test coordinator (a node refuses 0, runtime_config::validate).
  explicit reactor(size_t threads = 2);

  /// Stops the io_context and joins its threads.
  ~reactor();

  reactor(const reactor&) = delete;
  reactor& operator=(const reactor&) = delete;

  boost::asio::io_context& context() noexcept {
    return ctx_;
  }

  boost::asio::io_context::executor_type executor() noexcept {
    return ctx_.get_executor();
  }

private:
  boost::asio::io_context ctx_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type>
    guard_;
  std::vector<std::thread> threads_;
};

/// Blocks SIGPIPE in the calling thread until `restore` (or destruction),
/// then puts the previous mask back. Threads started meanwhile inherit the
/// block: a library that starts threads in a host application (an actor
/// system's workers) does so under one, and the host keeps its own SIGPIPE
/// disposition while a write of those threads to a closed pipe fails with
/// EPIPE instead of raising the signal.
class sigpipe_block {
public:
  sigpipe_block() noexcept;
  ~sigpipe_block() {
    restore();
  }
  sigpipe_block(const sigpipe_block&) = delete;
  sigpipe_block& operator=(const sigpipe_block&) = delete;

  /// Restores the mask the thread had before; idempotent.
  void restore() noexcept;

private:
  sigset_t old_;
  bool active_ = false;
};

} // namespace sandbox
