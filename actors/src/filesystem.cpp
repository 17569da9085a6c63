#include "sandbox/actors/filesystem.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace sandbox::actors {

namespace {

struct filesystem_state {
  static inline const char* name = "sandbox.filesystem";
  std::string working_directory;
  bool stopped = false;
};

filesystem_actor::behavior_type
filesystem_behavior(filesystem_actor::stateful_pointer<filesystem_state> self,
                    std::string working_directory) {
  self->state.working_directory = std::move(working_directory);
  return {
    [self](stop_atom) {
      self->state.stopped = true;
      return ok_atom_v;
    },
  };
}

} // namespace

filesystem_actor spawn_filesystem(caf::actor_system& sys,
                                  std::string working_directory) {
  return sys.spawn<caf::detached>(filesystem_behavior,
                                  std::move(working_directory));
}

} // namespace sandbox::actors
