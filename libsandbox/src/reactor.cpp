#include "sandbox/reactor.hpp"

#include <pthread.h>
#include <signal.h>

namespace sandbox {

reactor::reactor(size_t threads) : guard_(ctx_.get_executor()) {
  if (threads == 0)
    threads = 1;
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

} // namespace sandbox
