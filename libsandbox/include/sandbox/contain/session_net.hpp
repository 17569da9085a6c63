#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

/// One destination a contained session may connect to (an entry of its
/// allowlist, `HOST:PORT`), resolved to one address.
struct net_destination {
  /// The entry as given, for messages.
  std::string entry;
  /// The numeric address (`127.0.0.1`, `::1`).
  std::string address;
  uint16_t port = 0;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;

  /// Whether the address is a loopback one (127.0.0.0/8, ::1): inside the
  /// session it names the session's own loopback.
  bool loopback() const noexcept;
};

/// Parses and resolves allowlist entries: `A.B.C.D:PORT`, `[V6]:PORT` or
/// `NAME:PORT` (a name is looked up now, once, with getaddrinfo; every
/// address it has becomes a destination). Port 1 to 65535; an unspecified,
/// multicast or broadcast address is refused; duplicates are dropped.
/// Errors: `invalid_argument` naming the entry, e.g.
/// `invalid network destination "x": expected HOST:PORT`.
result<std::vector<net_destination>>
resolve_allowlist(const std::vector<std::string>& entries);

/// Only checks the syntax of `entry` (no lookup); the same errors.
result<void> validate_allow_entry(std::string_view entry);

/// A TCP socket made inside the network namespace of the process behind
/// `ns_pidfd` (a contained session's init): a short-lived clone of the
/// calling thread enters the init's user and network namespaces and makes
/// it in the caller's descriptor table. The socket keeps that namespace:
/// bound, connected and driven from the host like any other. `type` may
/// carry SOCK_NONBLOCK; SOCK_CLOEXEC is always added. Errors: the errno
/// of the clone, `setns` (ESRCH once the init is gone) or `socket`, as
/// `make_errno_error` maps it, naming the step.
result<unique_fd> socket_in_namespace(int ns_pidfd, int domain, int type);

/// Adds `dest`'s address to the loopback interface of the network
/// namespace of `ns_pidfd` (RTM_NEWADDR, a /32 or /128), unless it is a
/// loopback address already. Errors: `io_error` naming the address.
result<void> add_local_address(int ns_pidfd, const net_destination& dest);

/// A listening TCP socket (non-blocking, close-on-exec, SO_REUSEADDR) on
/// `addr`, made with `fd` when given (a socket of another namespace), else
/// a new one. Errors: `port_unavailable` when the address is in use, the
/// errno otherwise, naming `what`.
result<unique_fd> listen_tcp(const sockaddr* addr, socklen_t len,
                             std::string_view what, unique_fd fd = {});

} // namespace sandbox
