#include "remote/peer_uid.hpp"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "sandbox/unique_fd.hpp"

namespace sandbox::actors::detail {

namespace {

/// Both ends of a TCP connection, as the kernel's lookup wants them: one
/// family, addresses in network order (IPv4 in the first word).
struct four_tuple {
  uint8_t family = 0;
  uint32_t local_addr[4] = {};
  uint32_t peer_addr[4] = {};
  uint16_t local_port = 0; // network order
  uint16_t peer_port = 0;  // network order
};

/// `addr` into `out` (4 words) and `port`; an IPv4 address mapped into
/// IPv6 becomes IPv4 (`family` then AF_INET): the client's socket is an
/// IPv4 one.
void take(const sockaddr_storage& addr, uint8_t& family, uint32_t* out,
          uint16_t& port) {
  if (addr.ss_family == AF_INET) {
    auto& in = reinterpret_cast<const sockaddr_in&>(addr);
    family = AF_INET;
    out[0] = in.sin_addr.s_addr;
    port = in.sin_port;
    return;
  }
  auto& in6 = reinterpret_cast<const sockaddr_in6&>(addr);
  port = in6.sin6_port;
  if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
    family = AF_INET;
    std::memcpy(out, in6.sin6_addr.s6_addr + 12, 4);
    return;
  }
  family = AF_INET6;
  std::memcpy(out, in6.sin6_addr.s6_addr, 16);
}

result<four_tuple> tuple_of(int fd) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  socklen_t llen = sizeof(local);
  socklen_t plen = sizeof(peer);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0
      || ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0)
    return error{errc::io_error,
                 fmt::format("cannot read the connection's addresses: {}",
                             std::strerror(errno))};
  if (peer.ss_family != AF_INET && peer.ss_family != AF_INET6)
    return error{errc::io_error, "not a TCP/IP connection"};
  four_tuple t;
  uint8_t local_family = 0;
  take(local, local_family, t.local_addr, t.local_port);
  take(peer, t.family, t.peer_addr, t.peer_port);
  return t;
}

bool loopback(const four_tuple& t) {
  if (t.family == AF_INET)
    return (ntohl(t.peer_addr[0]) >> 24) == 127;
  in6_addr a{};
  std::memcpy(a.s6_addr, t.peer_addr, 16);
  return IN6_IS_ADDR_LOOPBACK(&a);
}

} // namespace

bool peer_is_loopback(int fd) {
  auto t = tuple_of(fd);
  return t && loopback(*t);
}

result<uint32_t> loopback_peer_uid(int fd) {
  auto t = tuple_of(fd);
  if (!t)
    return t.error();
  auto fail = [](std::string_view step, int err) {
    return error{errc::io_error,
                 fmt::format("sock_diag: {}: {}", step, std::strerror(err))};
  };
  unique_fd nl{
    ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)};
  if (nl.get() < 0)
    return fail("socket", errno);
  // The client's socket: its local end is our peer, its remote end us.
  struct {
    nlmsghdr hdr;
    inet_diag_req_v2 req;
  } msg{};
  msg.hdr.nlmsg_len = sizeof(msg);
  msg.hdr.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.hdr.nlmsg_flags = NLM_F_REQUEST;
  msg.hdr.nlmsg_seq = 1;
  msg.req.sdiag_family = t->family;
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_states = ~0u;
  msg.req.id.idiag_sport = t->peer_port;
  msg.req.id.idiag_dport = t->local_port;
  std::memcpy(msg.req.id.idiag_src, t->peer_addr, sizeof(t->peer_addr));
  std::memcpy(msg.req.id.idiag_dst, t->local_addr, sizeof(t->local_addr));
  msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(nl.get(), &msg, sizeof(msg), 0,
               reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel))
      != static_cast<ssize_t>(sizeof(msg)))
    return fail("send", errno);
  // The kernel answers while it handles the request: the answer is queued
  // before sendto returns, so reading never waits.
  alignas(nlmsghdr) char buf[8192];
  auto n = ::recv(nl.get(), buf, sizeof(buf), MSG_DONTWAIT);
  if (n < 0)
    return fail("receive", errno);
  auto len = static_cast<unsigned>(n);
  for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len);
       h = NLMSG_NEXT(h, len)) {
    if (h->nlmsg_type == NLMSG_ERROR) {
      auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(h));
      return fail("lookup", -e->error);
    }
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY
        || h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg)))
      continue;
    auto* d = static_cast<inet_diag_msg*>(NLMSG_DATA(h));
    // The socket asked for, not another one.
    if (d->id.idiag_sport != t->peer_port || d->id.idiag_dport != t->local_port)
      continue;
    return uint32_t{d->idiag_uid};
  }
  return fail("lookup", ENOENT);
}

} // namespace sandbox::actors::detail
