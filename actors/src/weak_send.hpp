#pragma once

// Messages from reactor callbacks to actors (private header).

#include <memory>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/fwd.hpp>
#include <caf/local_actor.hpp>
#include <caf/send.hpp>
#include <caf/weak_intrusive_ptr.hpp>

#include "runtime.hpp"
#include "sandbox/detail/tsan.hpp"

namespace sandbox::actors {

/// An actor as a callback on the reactor holds it: weakly, behind the
/// runtime's gate. Such a callback must never keep an actor alive, or reach
/// one once the actor system is going away: its last reference would drop
/// on a reactor thread with the system gone.
struct weak_target {
  caf::weak_actor_ptr actor;
  std::shared_ptr<actor_gate> gate;
};

inline weak_target weak_self(caf::local_actor* self, const runtime& rt) {
  return {caf::weak_actor_ptr{self->ctrl()}, rt.gate()};
}

/// Sends `xs...` to the actor behind `target` as a `Handle`, if it still
/// lives and the gate is open; otherwise the message has nobody to go to
/// and is dropped. Returns whether it was sent.
template <class Handle, class... Ts>
bool send_if_alive(const weak_target& target, Ts&&... xs) {
  bool sent = false;
  target.gate->run([&] {
    // What this thread did before the message is visible to the receiver.
    sandbox::detail::tsan_release_handover();
    if (auto strong = target.actor.lock()) {
      caf::anon_send(caf::actor_cast<Handle>(std::move(strong)),
                     std::forward<Ts>(xs)...);
      sent = true;
    }
  });
  return sent;
}

} // namespace sandbox::actors
