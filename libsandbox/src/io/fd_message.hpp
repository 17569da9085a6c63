#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstring>

namespace sandbox {

/// A socket message of one buffer that carries at most one descriptor
/// (`SCM_RIGHTS`), for `sendmsg` and `recvmsg`. `msg` points into the
/// object itself, so it neither copies nor moves.
struct fd_message {
  msghdr msg{};
  iovec iov{};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};

  /// The message's buffer is `size` bytes at `data`; with room for one
  /// descriptor (to receive one, or to send one after `attach`).
  fd_message(void* data, size_t size) {
    iov.iov_base = data;
    iov.iov_len = size;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
  }

  fd_message(const fd_message&) = delete;
  fd_message& operator=(const fd_message&) = delete;

  /// Readies the message to send one descriptor and returns where it goes:
  /// it may be written later (after a vfork, by the child) and before the
  /// `sendmsg`.
  int* attach() {
    auto* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    return reinterpret_cast<int*>(CMSG_DATA(c));
  }

  /// Readies the message to send no descriptor.
  void detach() {
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
  }

  /// After a `recvmsg` into it: the descriptor that came with the message,
  /// or -1 (the caller owns it).
  int received() {
    int fd = -1;
    for (auto* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
  }
};

} // namespace sandbox
