#pragma once

// Blocking request helpers shared by the blocking facades (blocking_session
// and blocking_files): a calling thread sends a request and waits for its
// one answer, or runs a streaming request through a relay actor.

#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "sandbox/actors/blocking_session.hpp"

namespace sandbox::actors::detail {

/// Sends `xs...` to `dest` from `self` and waits for one answer of type `T`.
/// A failed request becomes its sandbox error (see `from_caf`).
template <class T, class Handle, class... Ts>
result<T> ask_as(caf::scoped_actor& self, const Handle& dest, Ts&&... xs) {
  result<T> out = sandbox::error{errc::aborted, "no answer"};
  self->request(dest, caf::infinite, std::forward<Ts>(xs)...)
    .receive([&](T& x) { out = std::move(x); },
             [&](caf::error& err) { out = from_caf(err); });
  return out;
}

/// As `ask_as`, from a scoped actor of its own.
template <class T, class Handle, class... Ts>
result<T> ask(caf::actor_system& sys, const Handle& dest, Ts&&... xs) {
  caf::scoped_actor self{sys};
  return ask_as<T>(self, dest, std::forward<Ts>(xs)...);
}

/// As `ask_as`, for requests answered with an `Ack` atom (`ok_atom` or
/// `ack_atom`) that carries nothing else.
template <class Ack, class Handle, class... Ts>
result<void> ask_ack(caf::scoped_actor& self, const Handle& dest,
                     Ts&&... xs) {
  result<void> out;
  self->request(dest, caf::infinite, std::forward<Ts>(xs)...)
    .receive([](Ack) {}, [&](caf::error& err) { out = from_caf(err); });
  return out;
}

/// As `ask_ack` for `ok_atom`, from a scoped actor of its own.
template <class Handle, class... Ts>
result<void> ask_ok(caf::actor_system& sys, const Handle& dest, Ts&&... xs) {
  caf::scoped_actor self{sys};
  return ask_ack<ok_atom>(self, dest, std::forward<Ts>(xs)...);
}

/// Makes a streaming request on behalf of `self`: the calling thread is the
/// sink, and a small relay actor makes the request and hands the reply (a
/// `Done`, or the error) back, so that items (requests to us) and the reply
/// arrive in one mailbox and can be received in one loop.
template <class Done, class Handle, class... Ts>
void relay_request(caf::actor_system& sys, caf::scoped_actor& self,
                   const Handle& dest, Ts... xs) {
  auto me = caf::actor_cast<caf::actor>(self);
  sys.spawn([=](caf::event_based_actor* relay) {
    relay->request(dest, caf::infinite, xs...)
      .then(
        [=](Done& done) {
          relay->send(me, std::move(done));
          relay->quit();
        },
        [=](caf::error& err) {
          relay->send(me, std::move(err));
          relay->quit();
        });
  });
}

} // namespace sandbox::actors::detail
