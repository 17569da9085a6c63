// The accept() of a program that links sandbox::publish (see
// sandbox/actors/publish_accept.hpp): a connection that a published node
// accepts gets a descriptor number that no recent connection had. Only the
// listening sockets of published nodes (found by their port) are affected,
// and only once the program called `renumber_node_connections`; a host
// application's accept() calls return what the kernel gave, unchanged.
//
// CAF 0.17.6's BASP broker knows a connection by its descriptor number, and
// forgets a closed connection late: its cleanup waits in the broker's queue
// until every message received before it was delivered. When the kernel
// hands the closed connection's number to a new client meanwhile (it gives
// the lowest free number), the new connection inherits the old one's state
// and the late cleanup then erases the new one's routing entry and context:
// that client gets no heartbeat and half-parsed messages, its calls fail
// with `node_unreachable` ("the connection is gone") about 4 s later, and
// the node never notices it leave. Dozens of clients that come and go at
// once hit this about once in 30 connections. Moving each accepted
// connection to a number taken in turn from the upper half of the
// descriptor limit keeps a number unused for many connections after its
// close, far longer than the cleanup waits.
//
// This file is not part of sandbox::actors: a library must not define a
// libc function for every program that links it.

#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>

#include "remote/remote_detail.hpp"
#include "sandbox/actors/publish_accept.hpp"
#include "sandbox/actors/remote.hpp"

namespace sandbox::actors {

namespace {

using accept_fn = int (*)(int, sockaddr*, socklen_t*);

std::atomic<uint64_t> next_number{0};

/// Set by `renumber_node_connections`.
std::atomic<bool> enabled{false};

/// Whether `listener` is bound to the port of a published node.
bool is_node_listener(int listener) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return false;
  uint16_t port = 0;
  if (addr.ss_family == AF_INET)
    port = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  else if (addr.ss_family == AF_INET6)
    port = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  else
    return false;
  return detail::is_published_port(port);
}

/// `fd`, moved to the next number of the upper half of the descriptor
/// limit (close-on-exec); `fd` itself when that fails.
int renumber(int fd) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return fd;
  auto limit
    = static_cast<int64_t>(std::min<rlim_t>(lim.rlim_cur, rlim_t{1} << 20));
  auto low = std::max<int64_t>(64, limit / 2);
  if (limit - low < 64)
    return fd;
  auto want = low
              + static_cast<int64_t>(next_number++
                                     % static_cast<uint64_t>(limit - low));
  // The lowest free number from `want` on.
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(want));
  if (moved < 0)
    return fd;
  ::close(fd);
  return moved;
}

} // namespace

void renumber_node_connections() {
  enabled.store(true, std::memory_order_release);
}

} // namespace sandbox::actors

extern "C" int accept(int fd, sockaddr* addr, socklen_t* len) {
  static const auto real = reinterpret_cast<sandbox::actors::accept_fn>(
    ::dlsym(RTLD_NEXT, "accept"));
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  int got = real(fd, addr, len);
  if (got < 0 || !sandbox::actors::enabled.load(std::memory_order_acquire)
      || !sandbox::actors::is_node_listener(fd))
    return got;
  return sandbox::actors::renumber(got);
}
