#include "contain/syscall_judge.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/net.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "contain/path_judge.hpp"
#include "contain/seccomp_filter.hpp"
#include "core/paths.hpp"
#include "sandbox/process/process_tree.hpp"

namespace sandbox::detail {

namespace {

/// Whether a TCP socket of the caller's network namespace listens on
/// `port` at `addr` (raw words as /proc/net prints them) or at any
/// address.
bool listening(pid_t pid, bool v6, const uint32_t* addr, uint16_t port) {
  std::string text;
  if (!read_small_file(fmt::format("/proc/{}/net/{}", pid, v6 ? "tcp6" : "tcp"),
                       text))
    return false;
  size_t words = v6 ? 4 : 1;
  size_t pos = text.find('\n');
  while (pos != std::string::npos && pos + 1 < text.size()) {
    auto end = text.find('\n', pos + 1);
    auto line = text.substr(
      pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
    pos = end;
    // "sl: local_address rem_address st ..."
    char local[64] = {0};
    char remote[64] = {0};
    unsigned st = 0;
    if (std::sscanf(line.c_str(), " %*d: %63s %63s %x", local, remote, &st) != 3
        || st != 0x0A)
      continue;
    auto colon = std::strchr(local, ':');
    if (colon == nullptr || std::strtoul(colon + 1, nullptr, 16) != port
        || static_cast<size_t>(colon - local) != words * 8)
      continue;
    bool any = true;
    bool same = true;
    for (size_t i = 0; i < words; ++i) {
      char word[9] = {0};
      std::memcpy(word, local + i * 8, 8);
      auto w = static_cast<uint32_t>(std::strtoul(word, nullptr, 16));
      any = any && w == 0;
      same = same && w == addr[i];
    }
    if (any || same)
      return true;
  }
  return false;
}

/// Whether `path` exists in the caller's view (its root, so its mounts).
bool exists_for(pid_t pid, const std::string& path) {
  struct stat st;
  auto seen = fmt::format("/proc/{}/root{}", pid, path);
  return ::lstat(seen.c_str(), &st) == 0;
}

int socket_type(pid_t pid, int fd) {
  int type = SOCK_STREAM;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0)
    return type;
  int copy = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  if (copy >= 0) {
    socklen_t len = sizeof(type);
    if (::getsockopt(copy, SOL_SOCKET, SO_TYPE, &type, &len) != 0)
      type = SOCK_STREAM;
    ::close(copy);
  }
  ::close(pidfd);
  return type;
}

/// The destination of a connect, or of a `sendto` that names one, read
/// from the caller; none when it names none.
struct destination {
  sockaddr_storage ss{};
  uint64_t len = 0;
};

std::optional<destination> destination_of(const seccomp_notif& n) {
  auto pid = static_cast<pid_t>(n.pid);
  uint64_t addr = 0;
  uint64_t len = 0;
  if (n.data.nr == SYS_connect) {
    addr = n.data.args[1];
    len = n.data.args[2];
  } else if (n.data.nr == SYS_sendto) {
    addr = n.data.args[4];
    len = n.data.args[5];
  }
  destination d;
  d.len = std::min<uint64_t>(len, sizeof(d.ss));
  if (addr == 0 || d.len < sizeof(sa_family_t)
      || !read_memory(pid, addr, &d.ss, d.len))
    return std::nullopt;
  return d;
}

/// A unix socket's path (not an abstract name: those of the session's
/// network namespace only, which holds nothing of the host's).
verdict judge_unix(const seccomp_notif& n, const destination& d,
                   const watch_policy& policy) {
  constexpr size_t path_at = offsetof(sockaddr_un, sun_path);
  auto& a = reinterpret_cast<const sockaddr_un&>(d.ss);
  if (d.len <= path_at || a.sun_path[0] == '\0')
    return {};
  std::string text{a.sun_path,
                   ::strnlen(a.sun_path, std::min<size_t>(d.len - path_at,
                                                          sizeof(a.sun_path)))};
  auto* call = n.data.nr == SYS_connect ? "connect" : "sendto";
  return judge_unix_peer(static_cast<pid_t>(n.pid), call, text, policy);
}

verdict judge_connect(const seccomp_notif& n, const watch_policy& policy) {
  auto pid = static_cast<pid_t>(n.pid);
  auto dest = destination_of(n);
  if (!dest)
    return {};
  if (dest->ss.ss_family == AF_UNIX)
    return judge_unix(n, *dest, policy);
  // A send to an address on the network: refused by the namespace (a
  // connected stream socket ignores the address), reported as a connect.
  if (n.data.nr != SYS_connect)
    return {};
  auto& ss = dest->ss;
  auto len = dest->len;
  bool v6 = ss.ss_family == AF_INET6;
  if (ss.ss_family != AF_INET && !v6)
    return {};
  if ((!v6 && len < sizeof(sockaddr_in)) || (v6 && len < sizeof(sockaddr_in6)))
    return {};
  uint32_t words[4] = {0, 0, 0, 0};
  uint16_t port = 0;
  char text[INET6_ADDRSTRLEN] = {0};
  bool loopback = false;
  if (v6) {
    auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    std::memcpy(words, &a.sin6_addr, 16);
    port = ntohs(a.sin6_port);
    ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
    loopback = IN6_IS_ADDR_LOOPBACK(&a.sin6_addr)
               || (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr)
                   && a.sin6_addr.s6_addr[12] == 127);
  } else {
    auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    words[0] = a.sin_addr.s_addr;
    port = ntohs(a.sin_port);
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
    loopback = (ntohl(a.sin_addr.s_addr) >> 24) == 127;
  }
  auto to = v6 ? fmt::format("[{}]:{}", text, port)
               : fmt::format("{}:{}", text, port);
  if (socket_type(pid, static_cast<int>(n.data.args[0])) == SOCK_STREAM) {
    if (listening(pid, v6, words, port))
      return {};
    return {violation{violation_kind::connect_denied, policy.execution,
                      loopback ? to + " (nothing listens there in the session)"
                               : to}};
  }
  if (loopback)
    return {};
  return {violation{violation_kind::connect_denied, policy.execution, to}};
}

/// The cgroups of a process as the node sees them (`/proc/PID/cgroup`);
/// empty when unreadable.
std::string cgroups_of(const std::string& proc_path) {
  unique_fd fd{::open(proc_path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (!fd)
    return {};
  std::array<char, 1024> buf;
  auto n = ::read(fd.get(), buf.data(), buf.size());
  return n > 0 ? std::string{buf.data(), static_cast<size_t>(n)}
               : std::string{};
}

/// Whether the signal call `call` aims at a process Landlock's signal
/// scope refuses it: one of another cgroup than the caller's (each
/// execution has its own; the init and a child before its exec are in
/// others), read through the session's /proc.
bool out_of_scope(const seccomp_notif& n, const pid_call& call, pid_t target) {
  if (call.nr == SYS_pidfd_open || call.nr == SYS_process_vm_readv
      || call.nr == SYS_process_vm_writev || call.nr == SYS_ptrace)
    return false;
  auto mine = cgroups_of(fmt::format("/proc/{}/cgroup", n.pid));
  auto theirs
    = cgroups_of(fmt::format("/proc/{}/root/proc/{}/cgroup", n.pid, target));
  return !mine.empty() && !theirs.empty() && mine != theirs;
}

/// A call naming a pid that is no process (nor thread) of the caller's PID
/// namespace: its /proc, the session's own, has no such entry. The kernel
/// refuses it (ESRCH); the report says what was aimed at. With scoped
/// signals, a signal to a process of the session outside the caller's
/// execution is refused (EPERM) and reported too. A pid of 0 or below
/// (itself, a process group, every process) is not judged.
std::optional<violation> judge_pid(const seccomp_notif& n, const pid_call& call,
                                   const watch_policy& policy) {
  auto target
    = static_cast<pid_t>(static_cast<int32_t>(n.data.args[call.pid_arg]));
  if (target <= 0)
    return std::nullopt;
  if (exists_for(static_cast<pid_t>(n.pid), fmt::format("/proc/{}", target))) {
    if (policy.scoped_signals && out_of_scope(n, call, target))
      return violation{violation_kind::signal_denied, policy.execution,
                       fmt::format("{} {} (not a process of this execution)",
                                   call.name, target)};
    return std::nullopt;
  }
  // Any error but ENOENT (EACCES, ...) says nothing about the target. A
  // caller that is gone is not reported: its notification is no longer
  // valid.
  if (errno != ENOENT)
    return std::nullopt;
  return violation{violation_kind::signal_denied, policy.execution,
                   fmt::format("{} {}", call.name, target)};
}

} // namespace

/// The call `n` names as the x86-64 call it is judged as: itself when it
/// is one; for a watched call of another ABI its x86-64 number and its
/// arguments (i386's are 32 bits wide; `socketcall` holds connect's,
/// bind's or sendto's in the caller's memory). Nothing when it cannot be
/// told.
std::optional<seccomp_notif> as_native(const seccomp_notif& n) {
  if (n.data.arch == AUDIT_ARCH_X86_64
      && (static_cast<uint32_t>(n.data.nr) & __X32_SYSCALL_BIT) == 0)
    return n;
  auto* i = foreign_call_of(n.data);
  if (i == nullptr)
    return std::nullopt;
  auto out = n;
  out.data.arch = AUDIT_ARCH_X86_64;
  out.data.nr = static_cast<int>(i->native);
  if (i->abi != AUDIT_ARCH_I386)
    return out;
  for (auto& arg : out.data.args)
    arg &= 0xffffffffu;
  if (i->multiplexed) {
    // connect and bind take three arguments, sendto six.
    auto which = out.data.args[0];
    size_t count = which == SYS_SENDTO ? 6 : 3;
    if (which == SYS_CONNECT)
      out.data.nr = SYS_connect;
    else if (which == SYS_BIND)
      out.data.nr = SYS_bind;
    else if (which == SYS_SENDTO)
      out.data.nr = SYS_sendto;
    else
      return std::nullopt;
    uint32_t words[6] = {0, 0, 0, 0, 0, 0};
    if (!read_memory(static_cast<pid_t>(n.pid), out.data.args[1], words,
                     count * sizeof(uint32_t)))
      return std::nullopt;
    for (size_t k = 0; k < 6; ++k)
      out.data.args[k] = words[k];
  }
  return out;
}

/// What the node answers `n` (an x86-64 call).
verdict judge(const seccomp_notif& n, const watch_policy& policy) {
  auto nr = n.data.nr;
  if (nr == SYS_connect || nr == SYS_sendto)
    return judge_connect(n, policy);
  if (nr == SYS_bind)
    return {judge_bind(n, policy)};
  if (auto* call = pid_call_of(nr))
    return {judge_pid(n, *call, policy)};
  if (changes_metadata(nr))
    return judge_metadata(n, policy);
  return judge_write(n, policy);
}

} // namespace sandbox::detail
