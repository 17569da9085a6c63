// The scheduler of a node's actor system (`configure_scheduler`,
// sandbox/actors/node.hpp).

#include <algorithm>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "handoff_policy.hpp"
#include "sandbox/actors/node.hpp"

namespace sandbox::actors {

namespace {

caf::actor_system::module* make_handoff_coordinator(caf::actor_system& sys) {
  return new handoff_coordinator(sys);
}

} // namespace

void configure_scheduler(caf::actor_system_config& cfg,
                         const scheduler_config& sched) {
  // A second call replaces what a first one chose.
  using factory = caf::actor_system::module* (*) (caf::actor_system&);
  auto& mods = cfg.module_factories;
  mods.erase(std::remove_if(mods.begin(), mods.end(),
                            [](const auto& f) {
                              auto* fn = f.template target<factory>();
                              return fn != nullptr
                                     && *fn == &make_handoff_coordinator;
                            }),
             mods.end());
  switch (sched.policy) {
    case scheduler_policy::sharing:
      cfg.set("scheduler.policy", caf::atom("sharing"));
      break;
    case scheduler_policy::stealing:
      cfg.set("scheduler.policy", caf::atom("stealing"));
      break;
    case scheduler_policy::handoff:
      // CAF knows no such policy: the node loads its own scheduler module,
      // and the key only names it.
      cfg.set("scheduler.policy", caf::atom("handoff"));
      mods.emplace_back(&make_handoff_coordinator);
      break;
  }
  if (sched.threads > max_scheduler_threads)
    return;
  size_t threads = sched.threads;
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", threads);
}

} // namespace sandbox::actors
