#pragma once

// Which client a message to the node comes from (private). CAF's BASP
// broker names the sender of a remote message by the node id its
// connection announced in the client handshake; the door (remote_door.cpp)
// knows each connection's client (its peer uid, or its certificate) and
// notes here which node id that connection carries. The node actor asks
// for the sender's node id (docs/distributed.md, "Who owns a session").

#include <optional>
#include <string>

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

} // namespace sandbox::actors::detail
