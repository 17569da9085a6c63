#pragma once

// Requests to the node's actors from the HTTP server (private). A request
// is made by a short-lived event-based actor that sends it and runs the
// callback with the answer, on a CAF worker: no thread waits for a node.

#include <tuple>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/logger.hpp>

#include "exchange.hpp"
#include "sandbox/client/blocking_session.hpp"

namespace sandbox::http {

/// Spawns an actor on `sys` from any thread (a reactor thread, a CAF
/// worker). CAF 0.17.6's `spawn` makes the calling thread keep a
/// thread-local reference to the system's logger, and the system's
/// destructor waits until every such reference is gone: a reactor thread,
/// which outlives the system, would make an embedder's node hang at its
/// end. The reference is dropped again at once (CAF's own log lines of
/// that thread are lost; the node logs through spdlog).
template <class... Ts>
auto spawn_anywhere(caf::actor_system& sys, Ts&&... xs) {
  auto a = sys.spawn(std::forward<Ts>(xs)...);
  caf::logger::set_current_actor_system(nullptr);
  return a;
}

/// Sends `xs...` to `dest`; `on_ok` gets the answer, `on_err` the error.
template <class Handle, class OnOk, class OnErr, class... Ts>
void ask(caf::actor_system& sys, const Handle& dest, OnOk on_ok, OnErr on_err,
         Ts... xs) {
  spawn_anywhere(sys, [dest, on_ok = std::move(on_ok),
                       on_err = std::move(on_err),
                       args = std::make_tuple(std::move(xs)...)](
                        caf::event_based_actor* self) mutable {
    std::apply(
      [&](auto&... a) {
        self->request(dest, caf::infinite, std::move(a)...)
          .then(std::move(on_ok),
                [on_err = std::move(on_err)](caf::error& err) mutable {
                  on_err(actors::from_caf(err));
                });
      },
      args);
  });
}

/// As `ask`, an error answered on `ex` with its status.
template <class Handle, class OnOk, class... Ts>
void ask(caf::actor_system& sys, const exchange_ptr& ex, const Handle& dest,
         OnOk on_ok, Ts... xs) {
  ask(
    sys, dest, std::move(on_ok),
    [ex](const sandbox::error& err) { ex->fail(err); }, std::move(xs)...);
}

} // namespace sandbox::http
