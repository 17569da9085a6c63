#include "sandbox/io/reactor.hpp"

#include <pthread.h>
#include <signal.h>

namespace sandbox {

reactor::reactor(size_t threads) : guard_(ctx_.get_executor()) {
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this] {
      // Writes to a pipe whose reader is gone must fail with EPIPE, not kill
      // the node.
      sigset_t pipe_only;
      sigemptyset(&pipe_only);
      sigaddset(&pipe_only, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe_only, nullptr);
      ctx_.run();
    });
}

reactor::~reactor() {
  guard_.reset();
  ctx_.stop();
  for (auto& t : threads_)
    t.join();
}

sigpipe_block::sigpipe_block() noexcept {
  sigset_t pipe_only;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  active_ = pthread_sigmask(SIG_BLOCK, &pipe_only, &old_) == 0;
}

void sigpipe_block::restore() noexcept {
  if (active_)
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  active_ = false;
}

} // namespace sandbox
