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

#include "contain/seccomp_filter.hpp"
#include "core/paths.hpp"
#include "sandbox/process/process_tree.hpp"

namespace sandbox::detail {

namespace {

// -- reading the caller
// ----------------------------------------------------------

bool read_memory(pid_t pid, uint64_t addr, void* buf, size_t n) {
  iovec local{buf, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0)
         == static_cast<ssize_t>(n);
}

/// A NUL-terminated string of the caller (at most PATH_MAX bytes), read
/// page by page so that an unmapped page after it does no harm.
std::optional<std::string> read_string(pid_t pid, uint64_t addr) {
  std::string out;
  char buf[4096];
  while (out.size() < 4096) {
    size_t left = 4096 - (addr % 4096);
    if (!read_memory(pid, addr, buf, left))
      return std::nullopt;
    if (auto* nul = static_cast<char*>(std::memchr(buf, 0, left))) {
      out.append(buf, static_cast<size_t>(nul - buf));
      return out;
    }
    out.append(buf, left);
    addr += left;
  }
  return std::nullopt;
}

std::string read_link(const std::string& path) {
  char buf[4096];
  auto n = ::readlink(path.c_str(), buf, sizeof(buf));
  return n > 0 ? std::string{buf, static_cast<size_t>(n)} : std::string{};
}

/// `path` without `.`, `..` and repeated slashes (lexically).
std::string normalize(const std::string& path) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos <= path.size()) {
    auto end = path.find('/', pos);
    if (end == std::string::npos)
      end = path.size();
    auto part = path.substr(pos, end - pos);
    if (part == "..") {
      if (!parts.empty())
        parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(std::move(part));
    }
    pos = end + 1;
  }
  std::string out;
  for (auto& p : parts)
    out += "/" + p;
  return out.empty() ? "/" : out;
}

/// The absolute path the caller names with `dirfd` and `path`, as it sees
/// it (its cwd or the directory's path: the same strings in its mount
/// namespace), not yet normalized. Empty when it cannot be told.
std::string absolute_raw(pid_t pid, int dirfd, const std::string& path) {
  if (!path.empty() && path.front() == '/')
    return path;
  auto base = dirfd == AT_FDCWD
                ? read_link(fmt::format("/proc/{}/cwd", pid))
                : read_link(fmt::format("/proc/{}/fd/{}", pid, dirfd));
  if (base.empty() || base.front() != '/')
    return {};
  return base + "/" + path;
}

/// Where `path` (absolute) leads in the caller's view: every symbolic link
/// on the way followed as the kernel would (the last one only when
/// `follow_last`), an absolute target starting again at the caller's root.
/// Components that do not exist are taken as they are. Empty after 40
/// links (the kernel's ELOOP).
std::string resolve_in_view(pid_t pid, const std::string& path,
                            bool follow_last) {
  auto root = fmt::format("/proc/{}/root", pid);
  std::deque<std::string> left;
  auto push_front = [&left](const std::string& p) {
    std::vector<std::string> parts;
    size_t pos = 0;
    while (pos <= p.size()) {
      auto end = p.find('/', pos);
      if (end == std::string::npos)
        end = p.size();
      if (end > pos)
        parts.push_back(p.substr(pos, end - pos));
      pos = end + 1;
    }
    left.insert(left.begin(), parts.begin(), parts.end());
  };
  push_front(path);
  std::vector<std::string> done;
  auto joined = [&done] {
    std::string out;
    for (auto& d : done)
      out += "/" + d;
    return out.empty() ? std::string{"/"} : out;
  };
  int links = 0;
  while (!left.empty()) {
    auto part = std::move(left.front());
    left.pop_front();
    if (part == ".")
      continue;
    if (part == "..") {
      if (!done.empty())
        done.pop_back();
      continue;
    }
    done.push_back(part);
    if (left.empty() && !follow_last)
      break;
    struct stat st;
    auto seen = root + joined();
    if (::lstat(seen.c_str(), &st) != 0 || !S_ISLNK(st.st_mode))
      continue;
    if (++links > 40)
      return {};
    auto target = read_link(seen);
    if (target.empty())
      continue;
    done.pop_back();
    if (target.front() == '/')
      done.clear();
    push_front(target);
  }
  return joined();
}

/// Whether `path` exists in the caller's view (its root, so its mounts).
bool exists_for(pid_t pid, const std::string& path) {
  struct stat st;
  auto seen = fmt::format("/proc/{}/root{}", pid, path);
  return ::lstat(seen.c_str(), &st) == 0;
}

// -- judging one call
// ------------------------------------------------------------

/// How a system call names the path it writes.
enum class path_use {
  /// Writes the file (open for writing, truncate): refused when it exists
  /// or is created.
  write,
  /// Creates it (mkdir, mknod, symlink, link): refused unless it exists
  /// (then EEXIST comes first).
  create,
  /// Removes it (unlink, rmdir, rename's source): refused when it exists.
  remove,
  /// rename's destination: always a write.
  replace,
};

struct path_arg {
  int dirfd_index;
  int path_index;
  path_use use;
};

/// The paths `nr` writes; `flags` of an open decide between write and
/// create.
std::vector<path_arg> paths_of(long nr, uint64_t open_flags) {
  auto open_use = (open_flags & (O_WRONLY | O_RDWR | O_TRUNC)) != 0
                    ? path_use::write
                    : path_use::create;
  switch (nr) {
    case SYS_open:
      return {{-1, 0, open_use}};
    case SYS_openat:
    case SYS_openat2:
      return {{0, 1, open_use}};
    case SYS_creat:
    case SYS_truncate:
      return {{-1, 0, path_use::write}};
    case SYS_mkdir:
    case SYS_mknod:
      return {{-1, 0, path_use::create}};
    case SYS_mkdirat:
    case SYS_mknodat:
      return {{0, 1, path_use::create}};
    case SYS_unlink:
    case SYS_rmdir:
      return {{-1, 0, path_use::remove}};
    case SYS_unlinkat:
      return {{0, 1, path_use::remove}};
    case SYS_rename:
      return {{-1, 0, path_use::remove}, {-1, 1, path_use::replace}};
    case SYS_renameat:
    case SYS_renameat2:
      return {{0, 1, path_use::remove}, {2, 3, path_use::replace}};
    case SYS_link:
    case SYS_symlink:
      return {{-1, 1, path_use::create}};
    case SYS_linkat:
      return {{2, 3, path_use::create}};
    case SYS_symlinkat:
      return {{1, 2, path_use::create}};
    default:
      return {};
  }
}

/// The violation of a call that writes `text` (relative to `dirfd`) the
/// way `use` says, if Landlock will refuse it; `flags` are an open's.
std::optional<violation> judge_path(pid_t pid, const watch_policy& policy,
                                    int dirfd, const std::string& text,
                                    path_use use, uint64_t flags) {
  auto raw = absolute_raw(pid, dirfd, text);
  if (raw.empty())
    return std::nullopt;
  auto path = normalize(raw);
  if (detail::inside(path, "/dev") || detail::inside(path, "/proc"))
    return std::nullopt;
  auto inside = [&policy](const std::string& p) {
    for (auto& w : policy.writable)
      if (detail::inside(p, w))
        return true;
    return false;
  };
  std::string detail = path;
  if (inside(path)) {
    // A symbolic link on the way may still lead out; an open or a
    // truncate follows the last one too, unless told not to.
    bool follow_last = use == path_use::write && (flags & O_NOFOLLOW) == 0;
    auto real = resolve_in_view(pid, raw, follow_last);
    if (real.empty() || real == path || inside(real)
        || detail::inside(real, "/dev") || detail::inside(real, "/proc"))
      return std::nullopt;
    // A writable directory named through a link of its own.
    for (auto& w : policy.writable)
      if (detail::inside(real, resolve_in_view(pid, w, true)))
        return std::nullopt;
    detail = fmt::format("{} (-> {})", path, real);
    path = std::move(real);
  }
  bool there = exists_for(pid, path);
  bool refused = use == path_use::replace
                 || (use == path_use::write && (there || (flags & O_CREAT)))
                 || (use == path_use::create && !there)
                 || (use == path_use::remove && there);
  if (!refused)
    return std::nullopt;
  return violation{violation_kind::write_denied, policy.execution,
                   std::move(detail)};
}

std::optional<violation> judge_write(const seccomp_notif& n,
                                     const watch_policy& policy) {
  auto pid = static_cast<pid_t>(n.pid);
  auto nr = static_cast<long>(n.data.nr);
  uint64_t flags = 0;
  if (nr == SYS_open)
    flags = n.data.args[1];
  else if (nr == SYS_openat)
    flags = n.data.args[2];
  else if (nr == SYS_openat2) {
    open_how how{};
    if (!read_memory(pid, n.data.args[2], &how, sizeof(how.flags)))
      return std::nullopt;
    flags = how.flags;
    if ((flags & write_flags) == 0)
      return std::nullopt;
  }
  for (auto& a : paths_of(nr, flags)) {
    auto text = read_string(pid, n.data.args[a.path_index]);
    if (!text)
      continue;
    int dirfd = a.dirfd_index < 0
                  ? AT_FDCWD
                  : static_cast<int>(n.data.args[a.dirfd_index]);
    if (auto v = judge_path(pid, policy, dirfd, *text, a.use, flags))
      return v;
  }
  return std::nullopt;
}

/// A `bind` of a unix socket to a path makes a file there, relative to
/// the caller's cwd (an abstract address, starting with a NUL byte, makes
/// none; nor does any other family).
std::optional<violation> judge_bind(const seccomp_notif& n,
                                    const watch_policy& policy) {
  auto pid = static_cast<pid_t>(n.pid);
  sockaddr_un a{};
  constexpr size_t path_at = offsetof(sockaddr_un, sun_path);
  auto len = std::min<uint64_t>(n.data.args[2], sizeof(a));
  if (len <= path_at || !read_memory(pid, n.data.args[1], &a, len)
      || a.sun_family != AF_UNIX || a.sun_path[0] == '\0')
    return std::nullopt;
  std::string text{a.sun_path, ::strnlen(a.sun_path, len - path_at)};
  return judge_path(pid, policy, AT_FDCWD, text, path_use::create, 0);
}

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

std::optional<violation> judge_connect(const seccomp_notif& n,
                                       const watch_policy& policy) {
  auto pid = static_cast<pid_t>(n.pid);
  sockaddr_storage ss{};
  auto len = std::min<uint64_t>(n.data.args[2], sizeof(ss));
  if (len < sizeof(sa_family_t) || !read_memory(pid, n.data.args[1], &ss, len))
    return std::nullopt;
  bool v6 = ss.ss_family == AF_INET6;
  if (ss.ss_family != AF_INET && !v6)
    return std::nullopt;
  if ((!v6 && len < sizeof(sockaddr_in)) || (v6 && len < sizeof(sockaddr_in6)))
    return std::nullopt;
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
  auto dest = v6 ? fmt::format("[{}]:{}", text, port)
                 : fmt::format("{}:{}", text, port);
  if (socket_type(pid, static_cast<int>(n.data.args[0])) == SOCK_STREAM) {
    if (listening(pid, v6, words, port))
      return std::nullopt;
    return violation{violation_kind::connect_denied, policy.execution,
                     loopback ? dest + " (nothing listens there in the session)"
                              : dest};
  }
  if (loopback)
    return std::nullopt;
  return violation{violation_kind::connect_denied, policy.execution, dest};
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
/// arguments (i386's are 32 bits wide; `socketcall` holds connect's or
/// bind's three in the caller's memory). Nothing when it cannot be told.
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
    auto which = out.data.args[0];
    if (which != SYS_CONNECT && which != SYS_BIND)
      return std::nullopt;
    out.data.nr = which == SYS_CONNECT ? SYS_connect : SYS_bind;
    uint32_t words[3];
    if (!read_memory(static_cast<pid_t>(n.pid), out.data.args[1], words,
                     sizeof(words)))
      return std::nullopt;
    for (size_t k = 0; k < 6; ++k)
      out.data.args[k] = k < 3 ? words[k] : 0;
  }
  return out;
}

/// The violation the kernel will refuse `n` (an x86-64 call) for, if any.
std::optional<violation> judge(const seccomp_notif& n,
                               const watch_policy& policy) {
  if (n.data.nr == SYS_connect)
    return judge_connect(n, policy);
  if (n.data.nr == SYS_bind)
    return judge_bind(n, policy);
  if (auto* call = pid_call_of(n.data.nr))
    return judge_pid(n, *call, policy);
  return judge_write(n, policy);
}

} // namespace sandbox::detail
