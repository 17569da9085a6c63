#pragma once

// What the node's remote side shares inside the library (private): the
// liveness loop, the published ports the accept() of sandbox::publish reads,
// node names in messages, the client owner and the guard of blocking
// requests to remote actors.

#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/fwd.hpp>
#include <caf/message_id.hpp>

#include "sandbox/actors/remote.hpp"

namespace sandbox::actors {

/// Every connection of the actor system carries a heartbeat each
/// `remote_heartbeat` from now on, and one that carried nothing for
/// `remote_liveness` is closed. Idempotent (the first start of a system
/// holds); `connect_node` calls it, and `publish_node` starts the same loop
/// with a node's longer patience with its clients (12 s). It is not part of
/// CAF's start-up on purpose: CAF 0.17.6 would drop a connection whose
/// handshake spans a heartbeat tick (see remote.cpp).
void start_liveness(caf::actor_system& sys);

namespace detail {

/// Notes `port` as the port of a published node (`publish_node` calls
/// it). Only the accept() of sandbox::publish reads the list, to renumber
/// that node's connections (see sandbox/actors/publish_accept.hpp); the
/// list changes nothing by itself.
/// @returns false when no more ports can be noted (16 at most).
bool note_published_port(uint16_t port);

/// Whether `port` is the port of a node this process published.
bool is_published_port(uint16_t port);

} // namespace detail

/// The name of the node `id` in messages: the address it was connected
/// through, else CAF's node id.
std::string node_label(const caf::node_id& id);

/// The `node_unreachable` error of node `id` (see `node_label`).
caf::error unreachable_error(const caf::node_id& id);

/// The actor standing for this actor system as the creator of sessions on
/// remote nodes (one per system, created on first use). A node stops the
/// sessions it created (unless detached) once it is gone for longer than
/// the node's client grace period: when its connection drops.
caf::actor client_owner(caf::actor_system& sys);

/// While alive, guarantees that the request `response_id` of `self` to a
/// remote actor `dest` gets an answer: if `dest` goes down first (its node
/// died or its connection dropped), the answer is `node_unreachable`. Does
/// nothing for a local `dest`. Used by the blocking facade.
class response_guard {
public:
  response_guard(caf::blocking_actor* self, const caf::strong_actor_ptr& dest,
                 caf::message_id response_id);
  ~response_guard();
  response_guard(const response_guard&) = delete;
  response_guard& operator=(const response_guard&) = delete;

private:
  caf::strong_actor_ptr dest_;
  const void* token_ = nullptr;
};

} // namespace sandbox::actors
