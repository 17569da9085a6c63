#pragma once

// A listener of the test on the host's 127.0.0.1, on a port the kernel
// picks: a destination a contained session may be allowed to reach.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>

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

} // namespace sandbox::test
