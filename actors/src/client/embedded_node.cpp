#include "sandbox/client/embedded_node.hpp"

#include <optional>

#include <caf/actor_system.hpp>

#include "client/blocking_ask.hpp"
#include "client/host_thread.hpp"
#include "runtime.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/io/reactor.hpp"

namespace sandbox::actors {

struct embedded_node::impl {
  // First: the host's thread as it was before the actor system (see
  // `caf_logger_scope`); it lets go at the end of the node's constructor.
  std::optional<detail::caf_logger_scope> keep{std::in_place};
  system_config cfg;
  // The actor system's threads start blocking SIGPIPE; the host's thread
  // gets its mask back at once.
  sigpipe_block no_sigpipe;
  caf::actor_system sys;
  explicit impl(const scheduler_config& sched) : sys(configured(cfg, sched)) {
    no_sigpipe.restore();
    detail::open_facade_pool(sys);
  }
  static system_config& configured(system_config& cfg,
                                   const scheduler_config& sched) {
    configure_scheduler(cfg, sched);
    return cfg;
  }
};

embedded_node::embedded_node(runtime_config cfg, node_config ncfg)
  : rt_(make_runtime(std::move(cfg))),
    impl_(std::make_unique<impl>(ncfg.scheduler)) {
  node_ = spawn_node(impl_->sys, rt_, std::move(ncfg));
  impl_->keep.reset();
}

embedded_node::~embedded_node() {
  // Node shutdown stops every session: nothing outlives the node.
  (void) stop_all();
  // The facade's kept actors end before the system waits for its actors.
  detail::close_facade_pool(impl_->sys);
  node_ = nullptr;
  // Every actor ends while the reactor may still reach it; then the gate
  // closes, so no reactor callback touches an actor (or drops its last
  // reference) once the actor system is being destroyed.
  impl_->sys.await_all_actors_done();
  close_actor_gate(*rt_);
}

caf::actor_system& embedded_node::system() noexcept {
  return impl_->sys;
}

} // namespace sandbox::actors
