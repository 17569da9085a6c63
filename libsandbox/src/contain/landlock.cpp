#include "contain/landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

// Linux 6.2 (Landlock ABI 3); Debian 12's headers predate it.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#  define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

// Linux 6.12 (Landlock ABI 6): a domain's processes may signal only
// processes of the same domain or nested ones. Debian 12's headers predate
// it, and their `landlock_ruleset_attr` ends before `handled_access_net`
// (ABI 4) and `scoped` (ABI 6): the kernel's layout, for the sizes it takes.
#ifndef LANDLOCK_SCOPE_SIGNAL
#  define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

namespace sandbox::detail {

namespace {

struct ruleset_attr_v6 {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

long landlock_create(const void* attr, size_t size, uint32_t flags) {
  return ::syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

constexpr uint64_t read_access = LANDLOCK_ACCESS_FS_EXECUTE
                                 | LANDLOCK_ACCESS_FS_READ_FILE
                                 | LANDLOCK_ACCESS_FS_READ_DIR;

/// The file-system rights a ruleset of `abi` handles: all of them but
/// device ioctls (a command's own pipes and terminals stay usable).
uint64_t handled_access(int abi) {
  uint64_t a = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;
  if (abi >= 2)
    a |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3)
    a |= LANDLOCK_ACCESS_FS_TRUNCATE;
  return a;
}

/// Opens `path` as the init sees it (inside its mount namespace).
unique_fd open_in(int root, const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT;
  long fd = ::syscall(SYS_openat2, root, path.c_str(), &how, sizeof(how));
  return unique_fd{fd < 0 ? -1 : static_cast<int>(fd)};
}

result<void> add_rule(int ruleset, int root, const std::string& path,
                      uint64_t access, bool must_exist) {
  auto fd = open_in(root, path);
  if (!fd) {
    if (!must_exist)
      return {};
    return error{errc::io_error, fmt::format("Landlock rule for {}: {}", path,
                                             std::strerror(errno))};
  }
  struct stat st;
  if (::fstat(fd.get(), &st) == 0 && !S_ISDIR(st.st_mode))
    access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE
              | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE;
  landlock_path_beneath_attr attr{};
  attr.allowed_access = access;
  attr.parent_fd = fd.get();
  if (::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH,
                &attr, 0)
      != 0)
    return error{errc::io_error, fmt::format("Landlock rule for {}: {}", path,
                                             std::strerror(errno))};
  return {};
}

} // namespace

/// Reads the whole view, writes the working directory, the home, the
/// `allow_write` paths, the private /tmp and /dev/shm and the harmless
/// devices.
result<unique_fd> make_ruleset(pid_t init, const containment_spec& spec,
                               int abi) {
  // From ABI 6 on, signals are scoped too: a command cannot signal the
  // node's children before their exec (which would hold the launching
  // thread: a stopped vfork child), the init, nor another execution's
  // processes (reliability A5). The node signals from outside, unscoped.
  ruleset_attr_v6 attr{};
  attr.handled_access_fs = handled_access(abi);
  size_t size = sizeof(attr.handled_access_fs);
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_SIGNAL;
    size = sizeof(attr);
  }
  long fd = landlock_create(&attr, size, 0);
  if (fd < 0)
    return error{errc::unsupported, fmt::format("landlock_create_ruleset: {}",
                                                std::strerror(errno))};
  unique_fd ruleset{static_cast<int>(fd)};
  unique_fd root{::open(fmt::format("/proc/{}/root", init).c_str(),
                        O_PATH | O_DIRECTORY | O_CLOEXEC)};
  if (!root)
    return make_errno_error(errno, fmt::format("/proc/{}/root", init));
  auto all = attr.handled_access_fs;
  auto dev = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE
             | (abi >= 3 ? LANDLOCK_ACCESS_FS_TRUNCATE : 0);
  if (auto ok = add_rule(ruleset.get(), root.get(), "/", read_access, true);
      !ok)
    return ok.error();
  for (auto* path : {&spec.working_directory, &spec.home_directory})
    if (auto ok = add_rule(ruleset.get(), root.get(), *path, all, true); !ok)
      return ok.error();
  for (auto& path : spec.allow_write)
    if (auto ok = add_rule(ruleset.get(), root.get(), path, all, true); !ok)
      return ok.error();
  for (auto* path : {"/tmp", "/dev/shm"})
    if (auto ok = add_rule(ruleset.get(), root.get(), path, all, false); !ok)
      return ok.error();
  // The session's own devpts instance (terminals of its own, opened
  // through /dev/ptmx, a link to pts/ptmx) and its controlling terminal.
  for (auto* path :
       {"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts"})
    if (auto ok = add_rule(ruleset.get(), root.get(), path, dev, false); !ok)
      return ok.error();
  return ruleset;
}

int probe_landlock(std::string& detail) {
  long abi = landlock_create(nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0) {
    detail = fmt::format("landlock_create_ruleset: {}", std::strerror(errno));
    return 0;
  }
  return static_cast<int>(abi);
}

} // namespace sandbox::detail
