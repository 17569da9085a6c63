#include "contain/session_identity.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace sandbox::detail {

namespace {

/// The ids held by this process's sessions (guarded by `held_mutex`).
std::mutex held_mutex;
std::set<uint32_t> held;

/// The file whose bytes stand for the host's ids: a node holds byte N (an
/// open-file-description lock, which its end releases) while one of its
/// sessions is uid N, so that nodes of one machine with ranges that meet
/// never hand one id out twice. Root's (own ids need root), in /run.
constexpr const char* id_lock_path = "/run/sandbox-session-ids.lock";

/// This process's descriptor of that file (opened at the first lease);
/// none where it cannot be opened: the ids are then this process's only.
int id_lock_file() {
  static const int fd = ::open(id_lock_path,
                               O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  return fd;
}

/// Locks (`F_WRLCK`) or unlocks (`F_UNLCK`) byte `id`; false when another
/// process holds it.
bool lock_id(uint32_t id, short type) {
  int fd = id_lock_file();
  if (fd < 0)
    return true;
  struct flock l {};
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = static_cast<off_t>(id);
  l.l_len = 1;
  return ::fcntl(fd, F_OFD_SETLK, &l) == 0
         || (errno != EAGAIN && errno != EACCES);
}

/// A file system's name by its magic number, for error messages.
std::string fs_name(const char* path) {
  struct statfs st;
  if (::statfs(path, &st) != 0)
    return "its file system";
  switch (static_cast<unsigned long>(st.f_type)) {
    case EXT4_SUPER_MAGIC:
      return "ext4";
    case TMPFS_MAGIC:
      return "tmpfs";
    case BTRFS_SUPER_MAGIC:
      return "btrfs";
    case XFS_SUPER_MAGIC:
      return "xfs";
    case OVERLAYFS_SUPER_MAGIC:
      return "overlayfs";
    case NFS_SUPER_MAGIC:
      return "nfs";
    case FUSE_SUPER_MAGIC:
      return "fuse";
    case V9FS_MAGIC:
      return "9p";
    default:
      return fmt::format("the file system of type {:#x}",
                         static_cast<unsigned long>(st.f_type));
  }
}

bool write_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool ok = ::write(fd, text.data(), text.size())
            == static_cast<ssize_t>(text.size());
  int err = errno;
  ::close(fd);
  errno = err;
  return ok;
}

} // namespace

std::string why_no_own_ids() {
  if (::geteuid() != 0)
    return fmt::format("the node runs as uid {}, not root", ::geteuid());
  std::string map;
  {
    int fd = ::open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
    char buf[256];
    ssize_t n = fd >= 0 ? ::read(fd, buf, sizeof(buf)) : -1;
    if (fd >= 0)
      ::close(fd);
    if (n > 0)
      map.assign(buf, static_cast<size_t>(n));
  }
  unsigned a = 1, b = 1, c = 0;
  if (std::sscanf(map.c_str(), "%u %u %u", &a, &b, &c) != 3 || a != 0 || b != 0
      || c != 4294967295u)
    return "the node runs in a user namespace of its own, not the initial one";
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &hdr, data) != 0)
    return fmt::format("capget: {}", std::strerror(errno));
  for (auto [cap, name] : {std::pair{CAP_SETUID, "CAP_SETUID"},
                           std::pair{CAP_SETGID, "CAP_SETGID"},
                           std::pair{CAP_SYS_ADMIN, "CAP_SYS_ADMIN"}})
    if ((data[cap / 32].effective & (1u << (cap % 32))) == 0)
      return fmt::format("the node lacks {}", name);
  return {};
}

result<std::shared_ptr<id_lease>> id_lease::take(uint32_t base,
                                                 uint32_t count) {
  if (count == 0 || uint64_t{base} + count > uint64_t{0xfffffffe})
    return error{errc::invalid_argument,
                 fmt::format("invalid session id range {} + {}: must be "
                             "non-empty and below 4294967294",
                             base, count)};
  // A start of this process's own: two nodes of one machine seldom try
  // the same ids (the lock file keeps them apart when they do).
  static const uint32_t start = [] {
    std::random_device rd;
    return static_cast<uint32_t>(rd());
  }();
  std::lock_guard<std::mutex> guard{held_mutex};
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t id = base + (start + i) % count;
    // Ours first (the process's own locks never conflict with each other),
    // then the other nodes'.
    if (held.count(id) != 0 || !lock_id(id, F_WRLCK))
      continue;
    held.insert(id);
    return std::shared_ptr<id_lease>{new id_lease(id)};
  }
  return error{errc::unsupported,
               fmt::format("every session id of {}..{} is in use (by this "
                           "node or another one on this machine)",
                           base, uint64_t{base} + count - 1)};
}

id_lease::~id_lease() {
  std::lock_guard<std::mutex> guard{held_mutex};
  lock_id(id_, F_UNLCK);
  held.erase(id_);
}

result<unique_fd> cloned_tree(const char* path, uint64_t attr, bool recursive) {
  unique_fd tree{static_cast<int>(
    ::syscall(SYS_open_tree, AT_FDCWD, path,
              OPEN_TREE_CLONE | O_CLOEXEC | (recursive ? AT_RECURSIVE : 0)))};
  if (!tree)
    return make_errno_error(errno, fmt::format("cannot clone the mount of {} "
                                               "for a contained view",
                                               path));
  struct mount_attr ma {};
  ma.attr_set = attr;
  if (::syscall(SYS_mount_setattr, tree.get(), "",
                AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &ma, sizeof(ma))
      != 0)
    return make_errno_error(errno, fmt::format("cannot set the mount "
                                               "attributes of {} in a "
                                               "contained view",
                                               path));
  return tree;
}

result<unique_fd> idmapped_tree(const char* path, uint64_t attr, int userns) {
  auto tree = cloned_tree(path, attr, true);
  if (!tree)
    return tree;
  struct mount_attr ma {};
  ma.attr_set = MOUNT_ATTR_IDMAP;
  ma.userns_fd = static_cast<uint64_t>(userns);
  if (::syscall(SYS_mount_setattr, tree->get(), "",
                AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma))
      == 0)
    return tree;
  int err = errno;
  if (err == EINVAL)
    return error{errc::unsupported,
                 fmt::format("cannot make {} writable for the session's own "
                             "uid: {} (there or in a mount below it) has no "
                             "id-mapped mounts",
                             path, fs_name(path))};
  return make_errno_error(err, fmt::format("cannot make {} writable for the "
                                           "session's own uid (id-mapped "
                                           "mount)",
                                           path));
}

result<void> write_id_maps(pid_t pid, uint32_t id) {
  auto map = fmt::format("0 {} 1\n", id);
  for (auto [file, text] :
       {std::pair{"setgroups", std::string{"deny"}}, std::pair{"uid_map", map},
        std::pair{"gid_map", map}}) {
    auto path = fmt::format("/proc/{}/{}", pid, file);
    if (!write_file(path, text))
      return error{errc::unsupported, fmt::format("cannot write {}: {}", path,
                                                  std::strerror(errno))};
  }
  return {};
}

} // namespace sandbox::detail
