#pragma once

// Which client a message to the node comes from (private). CAF's BASP
// broker names the sender of a remote message by the node id its
// connection announced in the client handshake; the door (remote_door.cpp)
// knows each connection's client (its peer uid, or its certificate) and
// notes here which node id that connection carries. The node actor asks
// for the sender's node id (docs/distributed.md, "Who owns a session").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/node_id.hpp>

namespace sandbox::actors::detail {

/// The identity of the callers in the node's own process.
inline const std::string local_identity = "local";

/// Notes that a connection of the client `identity` carries node `id`.
/// Several connections may carry one node id for the same identity (a
/// client of two nodes of this process).
/// @returns false, noting nothing, when a live connection carries `id` for
///   another identity: a peer that claims another client's node id.
bool bind_peer(const caf::node_id& id, const std::string& identity);

/// A connection that carried `id` (see `bind_peer`) is gone.
void unbind_peer(const caf::node_id& id);

/// The identity of the client whose connection carries `id`; none when no
/// connection through a door carries it.
std::optional<std::string> peer_identity(const caf::node_id& id);

/// The client identity of the sender of the message `self` handles:
/// `local_identity` in this process, the identity of its connection's
/// client for a remote one (see `peer_identity`), empty (nobody) for a
/// sender that is unknown or anonymous.
std::string caller_identity(caf::local_actor* self);

/// Whether `who` is an admin: `local_identity` or one of `admins`.
bool is_admin(const std::vector<std::string>& admins, const std::string& who);

/// Notes that the actor `id` of the actor system `home` (a session) may be
/// addressed by remote clients of the identities `who` only: a peer that
/// addresses it by its number in any other identity's name is dropped by
/// the door (actor numbers are small and counted up per actor system: a
/// client could guess them).
void note_owned_actor(const caf::node_id& home, caf::actor_id id,
                      std::vector<std::string> who);

/// The actor `id` of `home` is gone (see `note_owned_actor`).
void forget_owned_actor(const caf::node_id& home, caf::actor_id id);

/// Whether a client of identity `who` may address the actor `id` of
/// `home`: always, unless `note_owned_actor` named it for others only.
bool may_address(const caf::node_id& home, caf::actor_id id,
                 const std::string& who);

} // namespace sandbox::actors::detail
