#pragma once

// Blocking request helpers shared by the blocking facades (blocking_session
// and blocking_files): a calling thread sends a request and waits for its
// one answer, or for the items of a streaming request and then its answer.

#include <memory>
#include <utility>

#include <caf/detail/type_traits.hpp>

#include <caf/actor_system.hpp>
#include <caf/behavior.hpp>
#include <caf/mailbox_element.hpp>
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
/// is never taken from the pool; nor does one left by an exception (a
/// streaming call's items may still come).
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

/// Answers the items `self` receives with `on_item` (an `ack_atom`, or an
/// error to cancel) until the answer to the request whose response id is
/// `response_id` arrives (`Done`, or the error that ended the stream), and
/// returns that answer. The one receive loop of every streaming call of
/// the facades: items (requests to `self`, the sink) and the answer arrive
/// in one mailbox, taken in their order. CAF's `receive` matches either a
/// response or other messages, never both, hence the loop here.
template <class Done, class OnItem>
result<Done> receive_stream(caf::scoped_actor& self,
                            caf::message_id response_id, OnItem on_item) {
  caf::behavior items{std::move(on_item)};
  result<Done> out = sandbox::error{errc::aborted, "no answer"};
  for (;;) {
    auto e = self->dequeue();
    if (!e)
      continue;
    auto& content = e->content();
    // By value: CAF 0.17's `message_id` comparison subtracts the ids as
    // signed integers, which overflows for a response id (UBSan reports
    // it).
    if (e->mid.integer_value() == response_id.integer_value()) {
      if (content.match_elements<Done>())
        out = std::move(*static_cast<Done*>(content.get_mutable(0)));
      else if (content.match_elements<caf::error>())
        out = from_caf(content.get_as<caf::error>(0));
      else
        out = sandbox::error{errc::io_error,
                             "unexpected answer: " + to_string(content)};
      break;
    }
    auto answer = items(content);
    // An item the sink does not know still gets its answer: the sender
    // must not wait for it.
    if (e->mid.is_request() && e->sender) {
      if (!answer)
        answer
          = caf::make_message(caf::make_error(caf::sec::unexpected_message));
      e->sender->enqueue(caf::make_mailbox_element(self->ctrl(),
                                                   e->mid.response_id(), {},
                                                   std::move(*answer)),
                         self->context());
    }
  }
  sandbox::detail::tsan_acquire_handover();
  return out;
}

/// Runs the streaming request `xs..., sink` to `dest` with the calling
/// thread as the sink (a `Sink` handle to its facade actor): the request
/// goes straight to `dest`, and its answer comes last, after every item
/// (see `receive_stream`). A request to a remote actor fails with
/// `node_unreachable` once the actor's node is gone.
template <class Sink, class Done, class Handle, class OnItem, class... Ts>
result<Done> ask_stream(caf::actor_system& sys, const Handle& dest,
                        OnItem on_item, Ts... xs) {
  facade_actor actor{sys, is_remote(sys, dest)};
  auto& self = *actor;
  sandbox::detail::tsan_release_handover();
  auto rh = self->request(dest, caf::infinite, std::move(xs)...,
                          caf::actor_cast<Sink>(self));
  response_guard guard{self.ptr(), caf::actor_cast<caf::strong_actor_ptr>(dest),
                       rh.id()};
  return receive_stream<Done>(self, rh.id(), std::move(on_item));
}

} // namespace sandbox::actors::detail
