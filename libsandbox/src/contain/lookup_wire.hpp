#pragma once

// The messages between the node and the thread that serves the file
// systems over denied directories (lookup_server.cpp): one per send on a
// SOCK_SEQPACKET pair, a descriptor attached where the protocol says.

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "io/fd_message.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox::lookup_wire {

/// The largest message between the node and the server: a denied path and
/// the kept directories (each shorter than PATH_MAX), or a report.
constexpr size_t max_message = 64 * 1024;

// Messages (SOCK_SEQPACKET, one per send):
//   node -> server:   'm' id path \0 keep \0 ...   make a file system
//                     'c' id                       close it
//   server -> node:   'k' id, with the mount       made
//                     'e' id text                  failed
//   server -> reporter: 'r' id pid path            a refusal
//   reporter -> server: 'a'                        reported
constexpr char make_msg = 'm';
constexpr char close_msg = 'c';
constexpr char made_msg = 'k';
constexpr char failed_msg = 'e';
constexpr char report_msg = 'r';
constexpr char ack_msg = 'a';

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

template <class T>
bool take(const char*& at, const char* end, T& v) {
  if (static_cast<size_t>(end - at) < sizeof(v))
    return false;
  std::memcpy(&v, at, sizeof(v));
  at += sizeof(v);
  return true;
}

/// Sends `msg` with `fd` attached (-1: none).
inline bool send_message(int sock, const std::string& msg, int fd = -1) {
  fd_message m{const_cast<char*>(msg.data()), msg.size()};
  if (fd >= 0)
    *m.attach() = fd;
  else
    m.detach();
  ssize_t n;
  do
    n = ::sendmsg(sock, &m.msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(msg.size());
}

/// Receives one message into `buf` (its size: what came; empty when the
/// other end is gone) and the descriptor that came with it, if any.
inline unique_fd receive_message(int sock, std::string& buf) {
  buf.resize(max_message);
  fd_message m{buf.data(), buf.size()};
  ssize_t n;
  do
    n = ::recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return unique_fd{m.received()};
}

} // namespace sandbox::lookup_wire
