#pragma once

// Whether an actor's handle went out over the network (private header).

#include <caf/actor_registry.hpp>
#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>

namespace sandbox::actors {

/// Whether the handle of `self` went out over the network (to a remote
/// client, or as the sender of a message to one). CAF's middleman then keeps
/// the actor in the actor registry, so that the remote side can reach it,
/// until the actor terminates: such an actor is never released by dropping
/// handles and must quit once it has nothing left to do.
inline bool handed_out(caf::local_actor* self) {
  return self->system().registry().get(self->id()) != nullptr;
}

} // namespace sandbox::actors
