#pragma once

// Messages from reactor callbacks to actors (private header).

#include <memory>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/execution_unit.hpp>
#include <caf/fwd.hpp>
#include <caf/local_actor.hpp>
#include <caf/logger.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
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

/// Where an actor woken by a reactor callback takes its turn: on the
/// callback's own thread, at once, rather than on a scheduler thread that
/// must be woken for it (one wake-up and two context switches less per
/// event). One per reactor thread and actor system. An actor that the turn
/// wakes in turn, and an actor with more than `turn` messages waiting, go
/// to the scheduler as usual; so does every actor while a turn runs (no
/// nesting).
class reactor_unit final : public caf::execution_unit {
public:
  /// Messages one turn handles at most before the actor goes to the
  /// scheduler with the rest.
  static constexpr size_t turn = 4;

  explicit reactor_unit(caf::actor_system& sys) : caf::execution_unit(&sys) {
  }

  void exec_later(caf::resumable* job) override {
    if (running_) {
      system().scheduler().enqueue(job);
      return;
    }
    running_ = true;
    auto next = job->resume(this, turn);
    running_ = false;
    // An actor that spawned one in its turn left CAF's logger in this
    // thread's storage (CAF 0.17 sets it at every spawn), and the actor
    // system's destructor waits until the logger's last reference is
    // gone, while this thread outlives the system: let go of it here.
    caf::logger::set_current_actor_system(nullptr);
    if (next == caf::resumable::resume_later)
      system().scheduler().enqueue(job);
    else
      caf::intrusive_ptr_release(job);
  }

  /// This thread's unit for `sys`, made on first use.
  static reactor_unit& of(caf::actor_system& sys) {
    thread_local std::unique_ptr<reactor_unit> unit;
    if (!unit || &unit->system() != &sys)
      unit = std::make_unique<reactor_unit>(sys);
    return *unit;
  }

private:
  bool running_ = false;
};

/// Sends `xs...` to the actor behind `target` as a `Handle`, if it still
/// lives and the gate is open; otherwise the message has nobody to go to
/// and is dropped. Returns whether it was sent. With `now` (a reactor or
/// file thread of a node whose reactor runs its own threads, see
/// `runtime::actor_turns`), the actor handles the message on this thread,
/// in a turn of `reactor_unit`, if the message woke it; else a scheduler
/// thread does.
template <class Handle, class... Ts>
bool send_now_if_alive(bool now, const weak_target& target, Ts&&... xs) {
  static_assert(sizeof...(Ts) > 0, "no message to send");
  using token = caf::detail::type_list<caf::detail::strip_and_convert_t<Ts>...>;
  static_assert(
    caf::response_type_unbox<caf::signatures_of_t<Handle>, token>::valid,
    "receiver does not accept given message");
  bool sent = false;
  target.gate->run([&] {
    // What this thread did before the message is visible to the receiver.
    sandbox::detail::tsan_release_handover();
    if (auto strong = target.actor.lock()) {
      caf::execution_unit* unit = nullptr;
      if (now)
        unit = &reactor_unit::of(*strong->home_system);
      strong->get()->eq_impl(caf::make_message_id(), nullptr, unit,
                             std::forward<Ts>(xs)...);
      sent = true;
    }
  });
  return sent;
}

/// As `send_now_if_alive`, always through the scheduler.
template <class Handle, class... Ts>
bool send_if_alive(const weak_target& target, Ts&&... xs) {
  return send_now_if_alive<Handle>(false, target, std::forward<Ts>(xs)...);
}

} // namespace sandbox::actors
