#pragma once

// A listener of the test on the host's 127.0.0.1, on a port the kernel
// picks: a destination a contained session may be allowed to reach; and a
// unix socket of the test's at a path, which one must not reach.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace sandbox::test {

struct host_listener {
  int fd = -1;
  uint16_t port = 0;

  explicit host_listener(int backlog = 4) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0
        || ::listen(fd, backlog) != 0
        || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("host listener");
    port = ntohs(addr.sin_port);
  }

  ~host_listener() {
    ::close(fd);
  }

  host_listener(const host_listener&) = delete;
  host_listener& operator=(const host_listener&) = delete;
};

/// A unix socket of the test's (`type`: SOCK_STREAM listens, SOCK_DGRAM
/// does not block) bound at `path`, with `mode`; -1 when it cannot be.
inline int host_unix_socket(const std::string& path, int type, mode_t mode) {
  int fd = ::socket(
    AF_UNIX, type | SOCK_CLOEXEC | (type == SOCK_DGRAM ? SOCK_NONBLOCK : 0), 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  if (fd < 0
      || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0
      || (type == SOCK_STREAM && ::listen(fd, 4) != 0)
      || ::chmod(path.c_str(), mode) != 0) {
    if (fd >= 0)
      ::close(fd);
    return -1;
  }
  return fd;
}

} // namespace sandbox::test
