#include "contain/path_judge.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
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
#include <vector>

#include <fmt/format.h>

#include "contain/seccomp_filter.hpp"
#include "contain/view_walk.hpp"
#include "core/paths.hpp"

namespace sandbox::detail {

namespace {

// -- the caller's view
// -----------------------------------------------------------

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

/// The path of the caller's descriptor `fd` as it sees it; empty for what
/// has none (a pipe, a socket, an anonymous inode, a memfd).
std::string path_of_fd(pid_t pid, int fd) {
  auto p = read_link(fmt::format("/proc/{}/fd/{}", pid, fd));
  if (p.empty() || p.front() != '/' || p.rfind("/memfd:", 0) == 0)
    return {};
  constexpr std::string_view deleted = " (deleted)";
  if (p.size() > deleted.size()
      && p.compare(p.size() - deleted.size(), deleted.size(), deleted) == 0)
    p.resize(p.size() - deleted.size());
  return p;
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

/// Whether `path` exists in the caller's view (its root, so its mounts).
bool exists_for(pid_t pid, const std::string& path) {
  struct stat st;
  auto seen = fmt::format("/proc/{}/root{}", pid, path);
  return ::lstat(seen.c_str(), &st) == 0;
}

bool in_writable(const watch_policy& policy, const std::string& p) {
  for (auto& w : policy.writable)
    if (detail::inside(p, w))
      return true;
  return false;
}

/// Where `raw` (absolute) leads for the caller, if it can be told, and
/// whether that is in a writable place (one named through a link of its
/// own too).
struct place {
  bool resolved = false;
  bool writable = false;
  std::string path;
};

place locate(pid_t pid, const watch_policy& policy, const std::string& raw,
             bool follow_last) {
  place out;
  auto w = walk_view_of(pid, raw, follow_last);
  if (w.status != view_walk::resolved)
    return out;
  out.resolved = true;
  out.path = std::move(w.path);
  out.writable = in_writable(policy, out.path);
  for (size_t i = 0; !out.writable && i < policy.writable.size(); ++i) {
    auto real = walk_view_of(pid, policy.writable[i], true);
    out.writable = real.status == view_walk::resolved
                   && detail::inside(out.path, real.path);
  }
  return out;
}

// -- writes
// ----------------------------------------------------------------------

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
  std::string detail = path;
  if (in_writable(policy, path)) {
    // A symbolic link on the way may still lead out; an open or a
    // truncate follows the last one too, unless told not to.
    bool follow_last = use == path_use::write && (flags & O_NOFOLLOW) == 0;
    auto real = locate(pid, policy, raw, follow_last);
    // Not resolved: too many links or components; the kernel refuses
    // what Landlock refuses, unreported.
    if (!real.resolved || real.writable || real.path == path
        || detail::inside(real.path, "/dev")
        || detail::inside(real.path, "/proc"))
      return std::nullopt;
    detail = fmt::format("{} (-> {})", path, real.path);
    path = std::move(real.path);
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

constexpr uint64_t set_id_bits = S_ISUID | S_ISGID;

// -- metadata
// --------------------------------------------------------------------

/// A call that changes a file's metadata: where its arguments are (-1:
/// none).
struct meta_call {
  long nr;
  const char* name;
  /// The directory `path` is relative to (-1: the cwd).
  int dirfd = -1;
  /// The path; -1 when the call names a descriptor (`fd`).
  int path = -1;
  int fd = -1;
  /// `AT_*` flags (`AT_SYMLINK_NOFOLLOW`, `AT_EMPTY_PATH`).
  int flags = -1;
  /// Whether the last link of `path` is followed (unless `flags` say not).
  bool follow = true;
  int mode = -1;
  /// The name of an extended attribute set (not one removed).
  int set_xattr = -1;
};

// clang-format off
const std::array<meta_call, 18> meta_calls = {{
  {SYS_chmod, "chmod", -1, 0, -1, -1, true, 1},
  {SYS_fchmod, "fchmod", -1, -1, 0, -1, true, 1},
  {SYS_fchmodat, "fchmodat", 0, 1, -1, -1, true, 2},
  {452 /* fchmodat2 */, "fchmodat2", 0, 1, -1, 3, true, 2},
  {SYS_chown, "chown", -1, 0},
  {SYS_fchown, "fchown", -1, -1, 0},
  {SYS_lchown, "lchown", -1, 0, -1, -1, false},
  {SYS_fchownat, "fchownat", 0, 1, -1, 4},
  {SYS_utimensat, "utimensat", 0, 1, -1, 3},
  {SYS_utimes, "utimes", -1, 0},
  {SYS_futimesat, "futimesat", 0, 1},
  {SYS_utime, "utime", -1, 0},
  {SYS_setxattr, "setxattr", -1, 0, -1, -1, true, -1, 1},
  {SYS_lsetxattr, "lsetxattr", -1, 0, -1, -1, false, -1, 1},
  {SYS_fsetxattr, "fsetxattr", -1, -1, 0, -1, true, -1, 1},
  {SYS_removexattr, "removexattr", -1, 0},
  {SYS_lremovexattr, "lremovexattr", -1, 0, -1, -1, false},
  {SYS_fremovexattr, "fremovexattr", -1, -1, 0},
}};
// clang-format on

const meta_call* meta_call_of(long nr) {
  for (auto& c : meta_calls)
    if (c.nr == nr)
      return &c;
  return nullptr;
}

/// `/proc/self/fd/N` (or `thread-self`): the caller's own descriptor N,
/// as glibc names a file it holds by `O_PATH` (`fchmodat` with
/// `AT_SYMLINK_NOFOLLOW`); -1 for any other path.
int own_fd_named(const std::string& path) {
  for (std::string_view prefix : {"/proc/self/fd/", "/proc/thread-self/fd/"}) {
    if (path.rfind(prefix, 0) != 0)
      continue;
    auto rest = path.substr(prefix.size());
    if (rest.empty() || rest.size() > 9
        || rest.find_first_not_of("0123456789") != std::string::npos)
      return -1;
    return std::stoi(rest);
  }
  return -1;
}

} // namespace

bool read_memory(pid_t pid, uint64_t addr, void* buf, size_t n) {
  iovec local{buf, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0)
         == static_cast<ssize_t>(n);
}

std::optional<std::string> read_string(pid_t pid, uint64_t addr) {
  // Page by page, so that an unmapped page after the string does no harm.
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

verdict judge_write(const seccomp_notif& n, const watch_policy& policy) {
  auto pid = static_cast<pid_t>(n.pid);
  auto nr = static_cast<long>(n.data.nr);
  uint64_t flags = 0;
  uint64_t mode = 0;
  if (nr == SYS_open) {
    flags = n.data.args[1];
    mode = n.data.args[2];
  } else if (nr == SYS_openat) {
    flags = n.data.args[2];
    mode = n.data.args[3];
  } else if (nr == SYS_creat || nr == SYS_mknod) {
    flags = O_CREAT;
    mode = n.data.args[1];
  } else if (nr == SYS_mknodat) {
    flags = O_CREAT;
    mode = n.data.args[2];
  } else if (nr == SYS_openat2) {
    open_how how{};
    if (!read_memory(pid, n.data.args[2], &how,
                     sizeof(how.flags) + sizeof(how.mode)))
      return {};
    flags = how.flags;
    mode = how.mode;
    if ((flags & write_flags) == 0)
      return {};
  }
  // A file made set-uid or set-gid from the start (the mode is the
  // caller's register, not its memory: no race but openat2's).
  bool makes = (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
  if (makes && (mode & set_id_bits) != 0) {
    bool at = nr != SYS_open && nr != SYS_creat && nr != SYS_mknod;
    auto text = read_string(pid, n.data.args[at ? 1 : 0]);
    auto name = nr == SYS_creat                        ? "creat"
                : nr == SYS_mknod || nr == SYS_mknodat ? "mknod"
                                                       : "open";
    return {violation{violation_kind::syscall_denied, policy.execution,
                      fmt::format("{} {:04o} {}", name, mode & 07777,
                                  text ? *text : "?")},
            true};
  }
  for (auto& a : paths_of(nr, flags)) {
    auto text = read_string(pid, n.data.args[a.path_index]);
    if (!text)
      continue;
    int dirfd = a.dirfd_index < 0
                  ? AT_FDCWD
                  : static_cast<int>(n.data.args[a.dirfd_index]);
    if (auto v = judge_path(pid, policy, dirfd, *text, a.use, flags))
      return {std::move(v), false};
  }
  return {};
}

std::optional<violation> judge_bind(const seccomp_notif& n,
                                    const watch_policy& policy) {
  // An abstract address (a NUL byte first) makes no file; nor does any
  // other family.
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

bool changes_metadata(long nr) {
  return meta_call_of(nr) != nullptr;
}

verdict judge_metadata(const seccomp_notif& n, const watch_policy& policy) {
  auto* c = meta_call_of(n.data.nr);
  if (c == nullptr)
    return {};
  auto pid = static_cast<pid_t>(n.pid);
  auto& args = n.data.args;
  uint64_t flags = c->flags < 0 ? 0 : args[c->flags];
  // The file: a descriptor's, or a path's (a null or, with AT_EMPTY_PATH,
  // an empty path names the directory descriptor itself).
  std::string fd_path;
  std::string raw;
  bool by_fd = c->path < 0;
  int fd = c->path < 0    ? static_cast<int>(args[c->fd])
           : c->dirfd < 0 ? AT_FDCWD
                          : static_cast<int>(args[c->dirfd]);
  std::string shown;
  if (!by_fd) {
    std::optional<std::string> text;
    if (args[c->path] != 0) {
      text = read_string(pid, args[c->path]);
      if (!text)
        return {
          violation{violation_kind::write_denied, policy.execution,
                    fmt::format("{} (a path the node cannot read)", c->name)},
          true};
    }
    // An empty path without AT_EMPTY_PATH: the kernel's ENOENT.
    if (text && text->empty() && (flags & AT_EMPTY_PATH) == 0)
      return {};
    if (!text || text->empty()) {
      by_fd = c->dirfd >= 0;
    } else {
      raw = absolute_raw(pid, fd, *text);
      shown = raw.empty() ? *text : normalize(raw);
      if (auto own = own_fd_named(shown); own >= 0) {
        by_fd = true;
        fd = own;
      }
    }
  }
  if (by_fd) {
    fd_path = path_of_fd(pid, fd);
    shown = fd_path.empty() ? fmt::format("fd {}", fd) : fd_path;
  }
  // Set-uid and set-gid modes and file capabilities, wherever the file is:
  // a program left behind that gives root to who runs it (the mode is the
  // caller's register: no race; the attribute's name is its memory).
  if (c->mode >= 0 && (args[c->mode] & set_id_bits) != 0)
    return {violation{violation_kind::syscall_denied, policy.execution,
                      fmt::format("{} {:04o} {}", c->name,
                                  args[c->mode] & 07777, shown)},
            true};
  if (c->set_xattr >= 0) {
    auto name = read_string(pid, args[c->set_xattr]);
    if (name && *name == "security.capability")
      return {
        violation{violation_kind::syscall_denied, policy.execution,
                  fmt::format("{} security.capability {}", c->name, shown)},
        true};
  }
  if (by_fd) {
    // What has no path (a pipe, a socket, a memfd) is no host file.
    if (fd_path.empty())
      return {};
    if (locate(pid, policy, fd_path, false).writable)
      return {};
    return {violation{violation_kind::write_denied, policy.execution,
                      fmt::format("{} {}", c->name, fd_path)},
            true};
  }
  if (raw.empty())
    return {violation{violation_kind::write_denied, policy.execution,
                      fmt::format("{} {} (not resolved)", c->name, shown)},
            true};
  bool follow = c->follow && (flags & AT_SYMLINK_NOFOLLOW) == 0;
  auto real = locate(pid, policy, raw, follow);
  if (real.writable)
    return {};
  std::string detail
    = !real.resolved ? fmt::format("{} {} (not resolved)", c->name, shown)
      : real.path == shown
        ? fmt::format("{} {}", c->name, shown)
        : fmt::format("{} {} (-> {})", c->name, shown, real.path);
  return {violation{violation_kind::write_denied, policy.execution,
                    std::move(detail)},
          true};
}

verdict judge_unix_peer(pid_t pid, const char* call, const std::string& text,
                        const watch_policy& policy) {
  auto raw = absolute_raw(pid, AT_FDCWD, text);
  if (raw.empty())
    return {};
  auto real = locate(pid, policy, raw, true);
  // Nothing there: the kernel answers ENOENT and nothing is reached.
  if (real.writable || (real.resolved && !exists_for(pid, real.path)))
    return {};
  return {violation{violation_kind::connect_denied, policy.execution,
                    fmt::format("{} unix:{}", call, normalize(raw))},
          true};
}

} // namespace sandbox::detail
