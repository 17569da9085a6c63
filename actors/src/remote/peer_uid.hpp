#pragma once

// Who is at the other end of a loopback connection (private): the kernel's
// answer, through sock_diag (docs/security.md, "The node's door").

#include <sys/socket.h>

#include <cstdint>

#include "sandbox/errc.hpp"

namespace sandbox::actors::detail {

/// Whether the peer of the accepted TCP socket `fd` is on this machine's
/// loopback (127.0.0.0/8, ::1, or 127.x mapped into IPv6).
bool peer_is_loopback(int fd);

/// The uid that owns the other end of the loopback TCP connection `fd`
/// (an accepted socket): the kernel records with every socket the uid that
/// created it, and reports it for the socket of the connection's 4-tuple
/// (NETLINK_SOCK_DIAG, `inet_diag_req_v2`). One request and one answer on a
/// netlink socket, neither of which waits on anything but the kernel.
/// @returns `io_error` naming the step that failed (no such socket any
///   more, for a peer that closed at once).
result<uint32_t> loopback_peer_uid(int fd);

} // namespace sandbox::actors::detail
