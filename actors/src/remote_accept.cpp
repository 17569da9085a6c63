// The accept() of every process that links the remote layer: a connection
// a node accepts gets a descriptor number that no recent connection had.
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

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>

#include "sandbox/actors/remote.hpp"

namespace sandbox::actors {

namespace {

using accept_fn = int (*)(int, sockaddr*, socklen_t*);

std::atomic<uint64_t> next_number{0};

/// `fd`, moved to the next number of the upper half of the descriptor
/// limit (close-on-exec); `fd` itself when that fails.
int renumber(int fd) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return fd;
  auto limit = static_cast<int64_t>(
    std::min<rlim_t>(lim.rlim_cur, rlim_t{1} << 20));
  auto low = std::max<int64_t>(64, limit / 2);
  if (limit - low < 64)
    return fd;
  auto want = low + static_cast<int64_t>(next_number++ % static_cast<uint64_t>(
                                           limit - low));
  // The lowest free number from `want` on.
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(want));
  if (moved < 0)
    return fd;
  ::close(fd);
  return moved;
}

} // namespace

namespace detail {

bool renumbers_accepted_connections() {
  return true;
}

} // namespace detail

} // namespace sandbox::actors

extern "C" int accept(int fd, sockaddr* addr, socklen_t* len) {
  static const auto real = reinterpret_cast<sandbox::actors::accept_fn>(
    ::dlsym(RTLD_NEXT, "accept"));
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  int got = real(fd, addr, len);
  return got < 0 ? got : sandbox::actors::renumber(got);
}
