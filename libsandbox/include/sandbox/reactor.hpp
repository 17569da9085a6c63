#pragma once

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
  /// Starts `threads` threads (at least one) running the io_context.
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

} // namespace sandbox
