#pragma once

// The node's door (private): the listening socket of a published node and
// the checks every accepted connection passes before CAF's BASP broker
// sizes anything for it (docs/security.md, "The node's door").

#include <cstdint>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/actors/remote.hpp"

namespace sandbox::actors::detail {

/// Listens on `bind:port` (empty: every address; port 0: a free one) and
/// hands `node` and the listening socket to the BASP broker of `sys`, as
/// `caf::io::publish` and `caf::openssl::publish` do, except that each
/// accepted connection goes through the door: a frame larger than
/// `door.max_frame_bytes` or a handshake not done within
/// `door.handshake_timeout` drops the connection, with a warning that names
/// the peer; without `tls`, a loopback peer whose uid is neither the
/// node's nor in `door.allowed_uids` is refused at once. Each connection's
/// node id is noted with its client identity (peer_identity.hpp). With `tls`,
/// the connection is caf::openssl's (the actor system must have loaded
/// caf::openssl::manager).
/// @returns the port; CAF's error when the socket cannot be opened.
caf::expected<uint16_t>
publish_through_door(caf::actor_system& sys, const node_actor& node,
                     const std::string& bind, uint16_t port, bool tls,
                     const door_config& door);

/// What the doors of this process refused so far.
struct door_counts {
  /// Connections dropped for announcing a frame above the maximum.
  uint64_t oversized_frames = 0;
  /// Connections dropped for not finishing their handshake in time.
  uint64_t late_handshakes = 0;
  /// Loopback connections refused for their uid.
  uint64_t foreign_uids = 0;
  /// Connections dropped for a node id not theirs (see peer_identity.hpp).
  uint64_t false_node_ids = 0;
};

door_counts door_counters();

} // namespace sandbox::actors::detail
