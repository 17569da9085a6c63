// Purpose-built child for process tests (as Boost.Process's tests do): one
// mode per behaviour, so tests do not depend on what /bin holds.
//
//   sandbox-test-child emit BYTES          writes BYTES bytes of 'x' (fast)
//   sandbox-test-child split-utf8          4-byte UTF-8 char across 64 KiB
//   sandbox-test-child ignore-term MS      ignores SIGTERM, then prints
//                                          "ready" and sleeps MS ms
//   sandbox-test-child all-bytes           writes bytes 0..255 to stdout
//   sandbox-test-child echo                copies stdin to stdout
//   sandbox-test-child exit N              exits with status N
//   sandbox-test-child connect PORT        connects to 127.0.0.1:PORT (0: to
//                                          a listener of its own first);
//                                          prints "connected" or the errno
//                                          name and exits 0 or 1
//   sandbox-test-child echo-server PORT    listens on 127.0.0.1:PORT, prints
//                                          "listening", then serves one
//                                          connection at a time: echoes
//                                          every byte, and after the peer's
//                                          half-close sends "bye\n" and
//                                          closes; runs until killed
//   sandbox-test-child fetch PORT [ADDR]   connects to ADDR:PORT (IPv4,
//                                          default 127.0.0.1), sends
//                                          "ping\n", half-closes, prints
//                                          what it reads until EOF (or the
//                                          errno name; exits 1)
//   sandbox-test-child fork-bomb           forks until fork fails; prints
//                                          "bounded after N" when it did
//                                          (its children pause until killed)
//   sandbox-test-child ptrace PID          seizes PID (ptrace): prints
//                                          "attached" (and detaches) or the
//                                          error, and exits 0 or 1
//   sandbox-test-child write-abi ABI PATH  creates PATH (O_WRONLY|O_CREAT|
//                                          O_TRUNC) through another ABI:
//                                          i386 (int $0x80: open, write,
//                                          close) or x32 (openat); prints
//                                          "written" or the errno name and
//                                          exits 0 or 1
//   sandbox-test-child sendto-i386 PATH    sends "x" to the unix datagram
//                                          socket PATH through i386's
//                                          socketcall(SYS_SENDTO); prints
//                                          "sent" or the errno name and
//                                          exits 0 or 1
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "foreign_abi.hpp"

namespace {

bool write_all(const char* data, size_t n) {
  while (n > 0) {
    auto w = ::write(1, data, n);
    if (w <= 0)
      return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int connect_to(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int listener = -1;
  if (port == 0) {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    socklen_t len = sizeof(addr);
    if (listener < 0
        || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) != 0
        || ::listen(listener, 1) != 0
        || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len)
             != 0) {
      std::printf("listen: %s\n", strerrorname_np(errno));
      return 1;
    }
  } else {
    addr.sin_port = htons(static_cast<uint16_t>(port));
  }
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0
      || ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    std::printf("%s\n", strerrorname_np(errno));
    return 1;
  }
  std::printf("connected\n");
  return 0;
}

bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    auto w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0)
      return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int echo_server(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int l = ::socket(AF_INET, SOCK_STREAM, 0);
  int on = 1;
  ::setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (l < 0 || ::bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0
      || ::listen(l, 16) != 0) {
    std::printf("listen: %s\n", strerrorname_np(errno));
    return 1;
  }
  std::printf("listening\n");
  std::fflush(stdout);
  std::vector<char> buf(1 << 16);
  for (;;) {
    int c = ::accept(l, nullptr, nullptr);
    if (c < 0)
      continue;
    for (;;) {
      auto n = ::recv(c, buf.data(), buf.size(), 0);
      if (n < 0)
        break;
      if (n == 0) {
        send_all(c, "bye\n", 4);
        break;
      }
      if (!send_all(c, buf.data(), static_cast<size_t>(n)))
        break;
    }
    ::close(c);
  }
}

int fetch(int port, const char* address) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  ::inet_pton(AF_INET, address, &addr.sin_addr);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0
      || ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0
      || !send_all(s, "ping\n", 5) || ::shutdown(s, SHUT_WR) != 0) {
    std::printf("%s\n", strerrorname_np(errno));
    return 1;
  }
  char buf[4096];
  for (;;) {
    auto n = ::recv(s, buf, sizeof(buf), 0);
    if (n < 0) {
      std::printf("%s\n", strerrorname_np(errno));
      return 1;
    }
    if (n == 0)
      return 0;
    write_all(buf, static_cast<size_t>(n));
  }
}

int write_abi(const std::string& abi, const char* path) {
  using namespace sandbox::test;
  auto* low = low_copy(path);
  if (low == nullptr || (abi != "i386" && abi != "x32"))
    return 2;
  auto flags = O_WRONLY | O_CREAT | O_TRUNC;
  long fd = abi == "i386"
              ? i386_syscall(i386_open, reinterpret_cast<long>(low), flags,
                             0644)
              : x32_syscall(x32_openat, AT_FDCWD, reinterpret_cast<long>(low),
                            flags, 0644);
  if (fd >= 0 && abi == "i386") {
    auto* x = low_copy("x");
    if (i386_syscall(i386_write, fd, reinterpret_cast<long>(x), 1) != 1)
      return 1;
    i386_syscall(i386_close, fd);
  }
  if (fd < 0) {
    std::printf("%s\n", strerrorname_np(static_cast<int>(-fd)));
    return 1;
  }
  std::printf("written\n");
  return 0;
}

int sendto_i386(const char* path) {
  using namespace sandbox::test;
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  std::strncpy(to.sun_path, path, sizeof(to.sun_path) - 1);
  auto* addr = low_copy(&to, sizeof(to));
  auto* x = low_copy("x");
  if (fd < 0 || addr == nullptr || x == nullptr)
    return 2;
  // socketcall's arguments: six 32-bit words in the caller's memory.
  uint32_t args[6] = {static_cast<uint32_t>(fd),
                      static_cast<uint32_t>(reinterpret_cast<uintptr_t>(x)),
                      1,
                      0,
                      static_cast<uint32_t>(reinterpret_cast<uintptr_t>(addr)),
                      static_cast<uint32_t>(sizeof(to))};
  auto* low_args = low_copy(args, sizeof(args));
  if (low_args == nullptr)
    return 2;
  long r = i386_syscall(i386_socketcall, i386_sys_sendto,
                        reinterpret_cast<long>(low_args));
  if (r < 0) {
    std::printf("%s\n", strerrorname_np(static_cast<int>(-r)));
    return 1;
  }
  std::printf("sent\n");
  return 0;
}

int fork_bomb() {
  for (int i = 0; i < 100000; ++i) {
    pid_t pid = ::fork();
    if (pid < 0) {
      std::printf("bounded after %d\n", i);
      return 0;
    }
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  std::printf("unbounded\n");
  return 1;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    return 2;
  std::string mode = argv[1];
  if (mode == "emit" && argc == 3) {
    auto total = std::strtoull(argv[2], nullptr, 10);
    std::vector<char> buf(1 << 20, 'x');
    while (total > 0) {
      auto n = total < buf.size() ? total : buf.size();
      if (!write_all(buf.data(), n))
        return 1;
      total -= n;
    }
    return 0;
  }
  if (mode == "split-utf8") {
    // 65534 ASCII bytes, then U+1F600 (4 bytes) straddling the 64 KiB mark
    // that is the pipe's buffer size, written in two separate writes.
    std::string head(65534, 'a');
    head += "\xF0\x9F";
    write_all(head.data(), head.size());
    ::usleep(20000);
    write_all("\x98\x80", 2);
    write_all("\n", 1);
    return 0;
  }
  if (mode == "ignore-term" && argc == 3) {
    ::signal(SIGTERM, SIG_IGN);
    write_all("ready\n", 6);
    ::usleep(static_cast<useconds_t>(std::atoi(argv[2])) * 1000);
    return 0;
  }
  if (mode == "all-bytes") {
    char bytes[256];
    for (int i = 0; i < 256; ++i)
      bytes[i] = static_cast<char>(i);
    return write_all(bytes, sizeof(bytes)) ? 0 : 1;
  }
  if (mode == "echo") {
    char buf[4096];
    for (;;) {
      auto n = ::read(0, buf, sizeof(buf));
      if (n <= 0)
        return 0;
      write_all(buf, static_cast<size_t>(n));
    }
  }
  if (mode == "exit" && argc == 3)
    return std::atoi(argv[2]);
  if (mode == "connect" && argc == 3)
    return connect_to(std::atoi(argv[2]));
  if (mode == "echo-server" && argc == 3)
    return echo_server(std::atoi(argv[2]));
  if (mode == "fetch" && (argc == 3 || argc == 4))
    return fetch(std::atoi(argv[2]), argc == 4 ? argv[3] : "127.0.0.1");
  if (mode == "fork-bomb")
    return fork_bomb();
  if (mode == "alloc" && argc == 3) {
    // Touches `argv[2]` MiB, page by page; prints "allocated" if it lived.
    auto mib = std::strtoull(argv[2], nullptr, 10);
    std::vector<char*> blocks;
    for (unsigned long long i = 0; i < mib; ++i) {
      auto* b = static_cast<char*>(std::malloc(1 << 20));
      if (b == nullptr)
        return 3;
      for (size_t j = 0; j < (1 << 20); j += 4096)
        b[j] = 1;
      blocks.push_back(b);
    }
    std::printf("allocated\n");
    return 0;
  }
  if (mode == "ptrace" && argc == 3) {
    // Attaches to pid `argv[2]` without stopping it (PTRACE_SEIZE):
    // "attached" (and detaches) or the error.
    auto pid = static_cast<pid_t>(std::atoi(argv[2]));
    if (::ptrace(PTRACE_SEIZE, pid, nullptr, nullptr) != 0) {
      std::printf("%s\n", std::strerror(errno));
      return 1;
    }
    ::ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
    std::printf("attached\n");
    return 0;
  }
  if (mode == "write-abi" && argc == 4)
    return write_abi(argv[2], argv[3]);
  if (mode == "sendto-i386" && argc == 3)
    return sendto_i386(argv[2]);
  if (mode == "spin") {
    // Burns CPU time until a signal ends it.
    for (volatile unsigned long long i = 0;; ++i)
      ;
  }
  return 2;
}
