#pragma once

// Blocking request helpers shared by the blocking facades (blocking_session
// and blocking_files): a calling thread sends a request and waits for its
// one answer, or runs a streaming request through a relay actor.

#include <memory>
#include <utility>

#include <caf/detail/type_traits.hpp>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "remote/remote_detail.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/detail/tsan.hpp"

namespace sandbox::actors::detail {

struct facade_pool;

/// The blocking actor of one plain request (one request, one answer):
/// one the actor system's node keeps for such requests (an `embedded_node`
/// keeps up to `facade_pool_size` while it lives), else one of its own.
/// A kept actor goes back once the answer came; one that asked a remote
/// actor does not (the guard's monitor may leave a message behind), and
/// is never taken from the pool.
class facade_actor {
public:
  facade_actor(caf::actor_system& sys, bool remote);
  ~facade_actor();

  facade_actor(const facade_actor&) = delete;
  facade_actor& operator=(const facade_actor&) = delete;

  caf::scoped_actor& operator*() noexcept {
    return *self_;
  }

private:
  std::shared_ptr<facade_pool> pool_;
  std::unique_ptr<caf::scoped_actor> self_;
};

/// Idle blocking actors an `embedded_node` keeps for its facades.
inline constexpr size_t facade_pool_size = 64;

/// Makes `sys`'s pool (its node keeps facade actors from now on).
void open_facade_pool(caf::actor_system& sys);

/// Ends `sys`'s pool: its idle actors end now, the ones in use when they
/// come back. Before the actor system waits for its actors.
void close_facade_pool(caf::actor_system& sys);

/// Whether `dest` lives on another node than `sys`.
template <class Handle>
bool is_remote(caf::actor_system& sys, const Handle& dest) {
  return dest && dest.node() != sys.node();
}

/// Sends `xs...` to `dest` from `self` and waits for one answer of type `T`.
/// A failed request becomes its sandbox error (see `from_caf`).
/// A request to a remote actor fails with `node_unreachable` once the
/// actor's node is gone (see `response_guard`), never waits forever.
template <class T, class Handle, class... Ts>
result<T> ask_as(caf::scoped_actor& self, const Handle& dest, Ts&&... xs) {
  result<T> out = sandbox::error{errc::aborted, "no answer"};
  sandbox::detail::tsan_release_handover();
  auto rh = self->request(dest, caf::infinite, std::forward<Ts>(xs)...);
  response_guard guard{self.ptr(), caf::actor_cast<caf::strong_actor_ptr>(dest),
                       rh.id()};
  rh.receive([&](T& x) { out = std::move(x); },
             [&](caf::error& err) { out = from_caf(err); });
  sandbox::detail::tsan_acquire_handover();
  return out;
}

/// Turns the values of one answer into a `result<R>` with `f`; CAF finds
/// the answer's types from `f`'s parameters (`Args`).
template <class R, class F, class Args>
struct reply_to_result;

template <class R, class F, class... Args>
struct reply_to_result<R, F, caf::detail::type_list<Args...>> {
  result<R>* out;
  F* f;
  void operator()(Args... xs) {
    *out = (*f)(std::forward<Args>(xs)...);
  }
};

/// Sends `xs...` to `dest` from a scoped actor of its own and waits for
/// one answer, which `f` (taking the answer's values, e.g.
/// `(session_actor&, session_info&)`) turns into the `R` returned. A failed
/// request becomes its sandbox error (see `from_caf`).
template <class R, class Handle, class F, class... Ts>
result<R> ask_map(caf::actor_system& sys, const Handle& dest, F f, Ts&&... xs) {
  using args = typename caf::detail::get_callable_trait<F>::arg_types;
  facade_actor actor{sys, is_remote(sys, dest)};
  auto& self = *actor;
  result<R> out = sandbox::error{errc::aborted, "no answer"};
  sandbox::detail::tsan_release_handover();
  auto rh = self->request(dest, caf::infinite, std::forward<Ts>(xs)...);
  response_guard guard{self.ptr(), caf::actor_cast<caf::strong_actor_ptr>(dest),
                       rh.id()};
  rh.receive(reply_to_result<R, F, args>{&out, &f},
             [&](caf::error& err) { out = from_caf(err); });
  sandbox::detail::tsan_acquire_handover();
  return out;
}

/// As `ask_as`, from a facade actor (see `facade_actor`).
template <class T, class Handle, class... Ts>
result<T> ask(caf::actor_system& sys, const Handle& dest, Ts&&... xs) {
  facade_actor self{sys, is_remote(sys, dest)};
  return ask_as<T>(*self, dest, std::forward<Ts>(xs)...);
}

/// As `ask_as`, for requests answered with an `Ack` atom (`ok_atom` or
/// `ack_atom`) that carries nothing else.
template <class Ack, class Handle, class... Ts>
result<void> ask_ack(caf::scoped_actor& self, const Handle& dest, Ts&&... xs) {
  result<void> out;
  sandbox::detail::tsan_release_handover();
  auto rh = self->request(dest, caf::infinite, std::forward<Ts>(xs)...);
  response_guard guard{self.ptr(), caf::actor_cast<caf::strong_actor_ptr>(dest),
                       rh.id()};
  rh.receive([](Ack) {}, [&](caf::error& err) { out = from_caf(err); });
  sandbox::detail::tsan_acquire_handover();
  return out;
}

/// As `ask_ack` for `ok_atom`, from a facade actor (see `facade_actor`).
template <class Handle, class... Ts>
result<void> ask_ok(caf::actor_system& sys, const Handle& dest, Ts&&... xs) {
  facade_actor self{sys, is_remote(sys, dest)};
  return ask_ack<ok_atom>(*self, dest, std::forward<Ts>(xs)...);
}

/// Makes a streaming request on behalf of `self`: the calling thread is the
/// sink, and a small relay actor makes the request and hands the reply (a
/// `Done`, or the error) back, so that items (requests to us) and the reply
/// arrive in one mailbox and can be received in one loop.
template <class Done, class Handle, class... Ts>
void relay_request(caf::actor_system& sys, caf::scoped_actor& self,
                   const Handle& dest, Ts... xs) {
  auto me = caf::actor_cast<caf::actor>(self);
  sandbox::detail::tsan_release_handover();
  sys.spawn([=](caf::event_based_actor* relay) {
    // A remote `dest` whose node is gone ends the stream with
    // `node_unreachable` (the reply would never come).
    if (dest.node() != relay->node()) {
      relay->monitor(dest);
      relay->set_down_handler([=](caf::down_msg& msg) {
        if (msg.source != dest.address())
          return;
        relay->send(me, unreachable_error(dest.node()));
        relay->quit();
      });
    }
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

/// Answers the items `self` receives with `on_item` (an `ack_atom`, or an
/// error to cancel) until the one reply (`Done`, or the error that ended
/// the stream) arrives, and returns that reply. The one receive loop of
/// every streaming call of the facades.
template <class Done, class OnItem>
result<Done> receive_stream(caf::scoped_actor& self, OnItem on_item) {
  result<Done> out = sandbox::error{errc::aborted, "no answer"};
  bool done = false;
  self->receive_while([&] { return !done; })(
    on_item,
    [&](Done& x) {
      out = std::move(x);
      done = true;
    },
    [&](caf::error& err) {
      out = from_caf(err);
      done = true;
    });
  sandbox::detail::tsan_acquire_handover();
  return out;
}

/// Runs the streaming request `xs..., sink` to `dest` with the calling
/// thread as the sink (a `Sink` handle to a scoped actor of its own); see
/// `receive_stream`.
template <class Sink, class Done, class Handle, class OnItem, class... Ts>
result<Done> ask_stream(caf::actor_system& sys, const Handle& dest,
                        OnItem on_item, Ts... xs) {
  caf::scoped_actor self{sys};
  relay_request<Done>(sys, self, dest, xs..., caf::actor_cast<Sink>(self));
  return receive_stream<Done>(self, on_item);
}

} // namespace sandbox::actors::detail
