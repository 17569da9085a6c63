#pragma once

// Messages from reactor callbacks to actors (private header).

#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/fwd.hpp>
#include <caf/local_actor.hpp>
#include <caf/send.hpp>
#include <caf/weak_intrusive_ptr.hpp>

namespace sandbox::actors {

/// A weak reference to `self`, for a callback that runs on the reactor:
/// such a callback must never keep an actor alive, or its last reference
/// could drop on a reactor thread after the actor system is gone.
inline caf::weak_actor_ptr weak_self(caf::local_actor* self) {
  return caf::weak_actor_ptr{self->ctrl()};
}

/// Sends `xs...` to the actor behind `weak` as a `Handle`, if it still
/// lives; otherwise the message has nobody to go to and is dropped.
template <class Handle, class... Ts>
void send_if_alive(const caf::weak_actor_ptr& weak, Ts&&... xs) {
  if (auto strong = weak.lock())
    caf::anon_send(caf::actor_cast<Handle>(std::move(strong)),
                   std::forward<Ts>(xs)...);
}

} // namespace sandbox::actors
