#include "sandbox/actors/runtime.hpp"

#include <signal.h>

#include <thread>

#include "sandbox/launcher.hpp"

namespace sandbox::actors {

runtime::runtime(runtime_config cfg)
  : cfg_(std::move(cfg)), base_env_(current_environment()) {
  // Writing to a pipe whose reader is gone must fail with EPIPE instead of
  // killing the node; children get default dispositions back at spawn.
  ::signal(SIGPIPE, SIG_IGN);
  reactor_ = std::make_unique<sandbox::reactor>(cfg_.reactor_threads);
  reaper_ = std::make_shared<sandbox::reaper>(*reactor_,
                                              cfg_.reap_all_orphans);
}

runtime::~runtime() {
  // The last reference may drop inside a reactor callback (a child's events
  // hold their process actor, whose state holds us). A reactor thread cannot
  // join itself: hand the teardown to a thread of its own, which joins the
  // reactor once the current callback has returned.
  if (reactor_->executor().running_in_this_thread()) {
    std::thread{[reap = std::move(reaper_),
                 r = std::move(reactor_)]() mutable {
      reap.reset();
      r.reset();
    }}.detach();
    return;
  }
  // The reaper's signal set lives on the reactor: destroy it first.
  reaper_.reset();
  reactor_.reset();
}

} // namespace sandbox::actors
