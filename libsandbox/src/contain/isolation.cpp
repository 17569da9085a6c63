#include "sandbox/isolation.hpp"
#include "sandbox/read_guard.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/landlock.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <fmt/format.h>

#include "process/child_syscall.hpp"
#include "contain/init_program.hpp"
#include "process/vm_child.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/log.hpp"
#include "sandbox/process_tree.hpp"
#include "sandbox/reactor.hpp"

// Linux 6.2 (Landlock ABI 3); Debian 12's headers predate it.
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#  define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

namespace sandbox {

using detail::child_sys;
using detail::clone_args_v2;
using detail::clone_into_cgroup;

std::string_view to_string(isolation_mode x) noexcept {
  return x == isolation_mode::contained ? "contained" : "none";
}

result<isolation_mode> parse_isolation(std::string_view text) {
  if (text == "none")
    return isolation_mode::none;
  if (text == "contained")
    return isolation_mode::contained;
  return error{errc::invalid_argument,
               fmt::format("invalid isolation {:?}: must be none or "
                           "contained",
                           std::string{text})};
}

namespace {

// -- the init program ---------------------------------------------------------
//
// PID 1 of a session is a small static program without libc
// (contain/init.c, built with the library and embedded as bytes), written
// once into a sealed memfd and executed from there: it shares nothing with
// the node (no copy of its memory, nothing of its address space a command
// could reach through ptrace). With SIGCHLD blocked (set by the launcher
// before the exec) it reaps every zombie, then sleeps until one more child
// ends. As PID 1 it ignores every signal sent from inside its namespace;
// SIGKILL from the node ends it, and the kernel then kills every process of
// the namespace.

/// The sealed memfd holding the init program, made once per process; -1
/// where it cannot be made (the error says why).
struct init_program {
  int fd = -1;
  std::string error;
};

const init_program& the_init_program() {
  static const init_program prog = [] {
    init_program p;
#if !defined(__x86_64__)
    p.error = "the session init exists for x86_64 only";
    return p;
#else
    constexpr unsigned mfd_exec = 0x10; // MFD_EXEC (Linux 6.3)
    int fd = ::memfd_create("sandbox-init",
                            MFD_CLOEXEC | MFD_ALLOW_SEALING | mfd_exec);
    if (fd < 0 && errno == EINVAL)
      fd = ::memfd_create("sandbox-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
      p.error = fmt::format("memfd_create: {}", std::strerror(errno));
      return p;
    }
    if (::write(fd, detail::init_program_bytes, detail::init_program_size)
          != static_cast<ssize_t>(detail::init_program_size)
        || ::fchmod(fd, 0555) != 0
        || ::fcntl(fd, F_ADD_SEALS,
                   F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)
             != 0) {
      p.error = fmt::format("writing the init program: {}",
                            std::strerror(errno));
      ::close(fd);
      return p;
    }
    p.fd = fd;
    return p;
#endif
  }();
  return prog;
}

// -- the init's set-up
// ----------------------------------------------------------
//
// The init is made by clone3 with every new namespace, CLONE_VM and
// CLONE_VFORK: like a command's child (launcher.cpp) it shares the node's
// memory until its exec, so its set-up makes system calls only and reads
// a plan the parent prepared.

enum init_stage : int {
  init_ok = 0,
  init_deathsig,
  init_setgroups,
  init_uid_map,
  init_gid_map,
  init_private,
  init_open_tree,
  init_masking,
  init_mkdir,
  init_move_mount,
  init_proc,
  init_loopback,
  init_hostname,
  init_stdio,
  init_exec,
};

const char* init_stage_name(int stage) {
  switch (stage) {
    case init_deathsig:
      return "PR_SET_PDEATHSIG";
    case init_setgroups:
      return "cannot write /proc/self/setgroups";
    case init_uid_map:
      return "cannot write the uid map";
    case init_gid_map:
      return "cannot write the gid map";
    case init_private:
      return "cannot make the mounts private";
    case init_open_tree:
      return "cannot clone a kept directory's mount";
    case init_masking:
      return "cannot mount over a denied path";
    case init_mkdir:
      return "cannot make a kept directory's mount point";
    case init_move_mount:
      return "cannot mount a kept directory";
    case init_proc:
      return "cannot mount proc";
    case init_loopback:
      return "cannot bring up the loopback interface";
    case init_hostname:
      return "cannot set the host name";
    case init_stdio:
      return "cannot redirect stdio";
    case init_exec:
      return "cannot execute the init program";
    default:
      return "clone";
  }
}

/// A path mounted over: a private tmpfs (/tmp), an empty directory or an
/// empty file (a denied path), a placeholder of the node's bound over a
/// denied path (`source`; see read_guard.hpp), or a detached mount of the
/// node's moved over one (`tree`; denied_directory.hpp).
struct init_mask {
  enum kind_t : int { private_tmp, hide_dir, hide_file } kind;
  const char* path;
  const char* source = nullptr;
  int tree = -1;
};

/// A directory that stays reachable inside a masked one: its mount is
/// cloned before the masks and moved back after them.
struct init_keep {
  const char* path;
  /// Directories to make inside the mask, parents first (the path last).
  const char* const* dirs;
  size_t ndirs;
  int tree = -1; // written by the child
};

struct init_plan {
  const char* uid_map = nullptr;
  size_t uid_map_len = 0;
  const char* gid_map = nullptr;
  size_t gid_map_len = 0;
  init_mask* masks = nullptr;
  size_t nmasks = 0;
  init_keep* keeps = nullptr;
  size_t nkeeps = 0;
  int devnull = -1;
  int program = -1;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int err = 0;
  int stage = init_ok;
};

SANDBOX_CHILD_FN long write_file(const char* path, const char* data,
                                 size_t len) {
  long fd = child_sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path),
                      O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return fd;
  long r = child_sys(SYS_write, fd, reinterpret_cast<long>(data),
                     static_cast<long>(len));
  child_sys(SYS_close, fd);
  return r < 0 ? r : 0;
}

SANDBOX_CHILD_FN long bring_up_loopback() {
  long s = child_sys(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return s;
  struct ifreq ifr;
  for (size_t i = 0; i < sizeof(ifr); ++i)
    reinterpret_cast<volatile char*>(&ifr)[i] = 0;
  ifr.ifr_name[0] = 'l', ifr.ifr_name[1] = 'o';
  long r = child_sys(SYS_ioctl, s, SIOCGIFFLAGS, reinterpret_cast<long>(&ifr));
  if (r >= 0) {
    ifr.ifr_flags |= IFF_UP;
    r = child_sys(SYS_ioctl, s, SIOCSIFFLAGS, reinterpret_cast<long>(&ifr));
  }
  child_sys(SYS_close, s);
  return r;
}

SANDBOX_CHILD_FN int init_main(void* arg) {
  auto* p = static_cast<init_plan*>(arg);
  long r = 0;
  int stage = init_ok;
  detail::reset_signal_dispositions();
  if ((r = child_sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL)) < 0) {
    stage = init_deathsig;
    goto fail;
  }
  // The maps name the node's own ids only, which a process may write for
  // its own new user namespace without any privilege outside it.
  if ((r = write_file("/proc/self/setgroups", "deny", 4)) < 0) {
    stage = init_setgroups;
    goto fail;
  }
  if ((r = write_file("/proc/self/uid_map", p->uid_map, p->uid_map_len)) < 0) {
    stage = init_uid_map;
    goto fail;
  }
  if ((r = write_file("/proc/self/gid_map", p->gid_map, p->gid_map_len)) < 0) {
    stage = init_gid_map;
    goto fail;
  }
  // Nothing mounted here propagates back to the host.
  if ((r = child_sys(SYS_mount, 0, reinterpret_cast<long>("/"), 0,
                     MS_REC | MS_PRIVATE, 0))
      < 0) {
    stage = init_private;
    goto fail;
  }
  for (size_t i = 0; i < p->nkeeps; ++i) {
    auto& k = p->keeps[i];
    r = child_sys(SYS_open_tree, AT_FDCWD, reinterpret_cast<long>(k.path),
                  OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE);
    if (r < 0) {
      stage = init_open_tree;
      goto fail;
    }
    k.tree = static_cast<int>(r);
  }
  // Placeholders first: they may lie in the host's /tmp, which the private
  // one covers next.
  for (size_t i = 0; i < 2 * p->nmasks; ++i) {
    auto& m = p->masks[i % p->nmasks];
    if ((m.source != nullptr || m.tree >= 0) != (i < p->nmasks))
      continue;
    if (m.tree >= 0)
      r = child_sys(SYS_move_mount, m.tree, reinterpret_cast<long>(""),
                    AT_FDCWD, reinterpret_cast<long>(m.path),
                    MOVE_MOUNT_F_EMPTY_PATH);
    else if (m.source != nullptr)
      r = child_sys(SYS_mount, reinterpret_cast<long>(m.source),
                    reinterpret_cast<long>(m.path), 0, MS_BIND, 0);
    else if (m.kind == init_mask::hide_file)
      r = child_sys(SYS_mount, reinterpret_cast<long>("/dev/null"),
                    reinterpret_cast<long>(m.path), 0, MS_BIND, 0);
    else
      r = child_sys(SYS_mount, reinterpret_cast<long>("tmpfs"),
                    reinterpret_cast<long>(m.path),
                    reinterpret_cast<long>("tmpfs"), MS_NOSUID | MS_NODEV,
                    reinterpret_cast<long>(m.kind == init_mask::private_tmp
                                             ? "mode=1777"
                                             : "mode=0755,size=64k"));
    if (r < 0) {
      stage = init_masking;
      goto fail;
    }
  }
  for (size_t i = 0; i < p->nkeeps; ++i) {
    auto& k = p->keeps[i];
    for (size_t j = 0; j < k.ndirs; ++j) {
      r = child_sys(SYS_mkdirat, AT_FDCWD, reinterpret_cast<long>(k.dirs[j]),
                    0755);
      if (r < 0 && r != -EEXIST) {
        stage = init_mkdir;
        goto fail;
      }
    }
    r = child_sys(SYS_move_mount, k.tree, reinterpret_cast<long>(""), AT_FDCWD,
                  reinterpret_cast<long>(k.path), MOVE_MOUNT_F_EMPTY_PATH);
    if (r < 0) {
      stage = init_move_mount;
      goto fail;
    }
  }
  // A /proc of the new PID namespace: only the session's processes.
  if ((r = child_sys(SYS_mount, reinterpret_cast<long>("proc"),
                     reinterpret_cast<long>("/proc"),
                     reinterpret_cast<long>("proc"),
                     MS_NOSUID | MS_NODEV | MS_NOEXEC, 0))
      < 0) {
    stage = init_proc;
    goto fail;
  }
  if ((r = bring_up_loopback()) < 0) {
    stage = init_loopback;
    goto fail;
  }
  if ((r = child_sys(SYS_sethostname, reinterpret_cast<long>("sandbox"), 7))
      < 0) {
    stage = init_hostname;
    goto fail;
  }
  child_sys(SYS_chdir, reinterpret_cast<long>("/"));
  if ((r = child_sys(SYS_dup3, p->devnull, 0, 0)) < 0
      || (r = child_sys(SYS_dup3, p->devnull, 1, 0)) < 0
      || (r = child_sys(SYS_dup3, p->devnull, 2, 0)) < 0) {
    stage = init_stdio;
    goto fail;
  }
  // Everything else closes at the exec; the program (close-on-exec too) is
  // read before that.
  child_sys(SYS_close_range, 3, ~0L, CLOSE_RANGE_CLOEXEC);
  {
    uint64_t chld = uint64_t{1} << (SIGCHLD - 1);
    child_sys(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&chld), 0,
              8);
  }
  r = child_sys(SYS_execveat, p->program, reinterpret_cast<long>(""),
                reinterpret_cast<long>(p->argv),
                reinterpret_cast<long>(p->envp), AT_EMPTY_PATH);
  stage = init_exec;
fail:
  p->err = static_cast<int>(-r);
  p->stage = stage;
  child_sys(SYS_exit, 127);
  return 127;
}

constexpr size_t init_stack_size = 32 * 1024;

/// Whether `path` is `dir` or lies below it.
bool inside(const std::string& path, const std::string& dir) {
  if (dir == "/")
    return true;
  return path == dir
         || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0
             && path[dir.size()] == '/');
}

/// Everything the init plan points to, owned here.
struct init_layout {
  std::string uid_map;
  std::string gid_map;
  std::vector<std::string> mask_paths;
  std::vector<init_mask> masks;
  std::vector<std::string> keep_paths;
  std::vector<std::vector<std::string>> keep_dirs;
  std::vector<std::vector<const char*>> keep_dir_ptrs;
  std::vector<init_keep> keeps;
};

/// What gets mounted over: the private /tmp and /dev/shm, then the denied
/// paths that exist and are not inside another mask already; then which
/// of the working directory and home must be brought back.
void plan_mounts(const containment_spec& spec, init_layout& l) {
  std::vector<std::pair<std::string, init_mask::kind_t>> masks;
  masks.emplace_back("/tmp", init_mask::private_tmp);
  masks.emplace_back("/dev/shm", init_mask::private_tmp);
  auto deny = spec.deny;
  std::sort(deny.begin(), deny.end());
  for (auto& d : deny) {
    struct stat st;
    if (d.empty() || d[0] != '/' || ::stat(d.c_str(), &st) != 0)
      continue;
    bool covered = false;
    for (auto& [m, kind] : masks)
      covered = covered || inside(d, m);
    if (covered)
      continue;
    masks.emplace_back(d, S_ISDIR(st.st_mode) ? init_mask::hide_dir
                                              : init_mask::hide_file);
  }
  for (auto& [path, kind] : masks) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      continue;
    l.mask_paths.push_back(path);
    l.masks.push_back(init_mask{kind, nullptr});
  }
  for (size_t i = 0; i < l.masks.size(); ++i) {
    l.masks[i].path = l.mask_paths[i].c_str();
    if (l.masks[i].kind == init_mask::private_tmp)
      continue;
    auto ph = spec.placeholders.find(l.mask_paths[i]);
    if (ph != spec.placeholders.end())
      l.masks[i].source = ph->second.c_str();
    auto tree = spec.mounts.find(l.mask_paths[i]);
    if (tree != spec.mounts.end() && l.masks[i].kind == init_mask::hide_dir)
      l.masks[i].tree = tree->second;
  }
  for (auto* keep : {&spec.working_directory, &spec.home_directory}) {
    const std::string* under = nullptr;
    for (auto& m : l.mask_paths)
      if (inside(*keep, m) && (under == nullptr || m.size() > under->size()))
        under = &m;
    if (under == nullptr
        || std::find(l.keep_paths.begin(), l.keep_paths.end(), *keep)
             != l.keep_paths.end())
      continue;
    // A keep inside another keep comes back with its parent.
    bool nested = false;
    for (auto* other : {&spec.working_directory, &spec.home_directory})
      nested = nested
               || (other != keep && *other != *keep && inside(*keep, *other)
                   && !inside(*other, *keep) && inside(*other, *under));
    if (nested)
      continue;
    l.keep_paths.push_back(*keep);
    std::vector<std::string> dirs;
    for (size_t at = under->size() + 1; at <= keep->size(); ++at)
      if (at == keep->size() || (*keep)[at] == '/')
        dirs.push_back(keep->substr(0, at));
    l.keep_dirs.push_back(std::move(dirs));
  }
  for (auto& dirs : l.keep_dirs) {
    std::vector<const char*> ptrs;
    for (auto& d : dirs)
      ptrs.push_back(d.c_str());
    l.keep_dir_ptrs.push_back(std::move(ptrs));
  }
  for (size_t i = 0; i < l.keep_paths.size(); ++i)
    l.keeps.push_back(init_keep{l.keep_paths[i].c_str(),
                                l.keep_dir_ptrs[i].data(),
                                l.keep_dir_ptrs[i].size(), -1});
}

// -- Landlock
// -------------------------------------------------------------------

long landlock_create(const landlock_ruleset_attr* attr, size_t size,
                     uint32_t flags) {
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

/// Reads the whole system, writes the working directory, the home, the
/// private /tmp and /dev/shm and the harmless devices.
result<unique_fd> make_ruleset(pid_t init, const containment_spec& spec,
                               int abi) {
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled_access(abi);
  long fd = landlock_create(&attr, sizeof(attr.handled_access_fs), 0);
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
  for (auto* path : {"/tmp", "/dev/shm"})
    if (auto ok = add_rule(ruleset.get(), root.get(), path, all, false); !ok)
      return ok.error();
  for (auto* path : {"/dev/null", "/dev/zero", "/dev/full"})
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

std::vector<std::string> own_controllers() {
  std::vector<std::string> out;
  auto own = find_own_cgroup();
  if (!own)
    return out;
  std::string text;
  // What the node's directories below its own cgroup can get.
  if (!read_small_file(*own + "/cgroup.subtree_control", text))
    return out;
  std::string word;
  for (char c : text + " ") {
    if (c == ' ' || c == '\n') {
      if (!word.empty())
        out.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  return out;
}

/// The node's own directory in the v1 hierarchy of `controller` when a
/// directory can be made below it; empty otherwise.
std::string usable_v1_directory(const char* controller) {
  auto own = find_own_cgroup_v1(controller);
  if (!own)
    return {};
  auto probe = fmt::format("{}/sandbox-probe-{}", *own, ::getpid());
  if (::mkdir(probe.c_str(), 0755) != 0)
    return {};
  ::rmdir(probe.c_str());
  return *own;
}

/// The number after `key` at the start of a line of `text` (0: none).
uint64_t counter_in(const std::string& text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string_view line{text.data() + pos, end - pos};
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0
        && line[key.size()] == ' ')
      return std::strtoull(std::string{line.substr(key.size() + 1)}.c_str(),
                           nullptr, 10);
    pos = end + 1;
  }
  return 0;
}

/// Kills `pidfd`'s process and reaps it, blocking.
void kill_and_reap(pid_t pid, int pidfd) {
  ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
  detail::reap(pid);
}

/// Reaps a contained session's init once: when its pidfd reports the end
/// on the reactor, or else when the wait is dropped unrun (the reactor was
/// destroyed first: Asio destroys pending handlers without calling them),
/// so that no zombie is left to the host either way.
struct pending_init_reap {
  pending_init_reap(boost::asio::io_context& io, pid_t pid, unique_fd pidfd,
                    std::shared_ptr<session_limits> held)
    : desc(io, pidfd.release()), pid(pid), held(std::move(held)) {
  }
  ~pending_init_reap() {
    if (reaped)
      return;
    // The init was killed already; it ends once every process of its
    // namespace was reaped. The node's own commands are reaped by their
    // own watches, which the same teardown may not have dropped yet: the
    // wait is bounded.
    struct pollfd ended {
      desc.native_handle(), POLLIN, 0
    };
    if (::poll(&ended, 1, 5000) == 1)
      reap();
    else
      log::logger()->warn("the init {} of a contained session did not end "
                          "within 5 s of the reactor's end: left unreaped",
                          pid);
  }
  void reap() noexcept {
    if (reaped)
      return;
    reaped = true;
    kill_and_reap(pid, desc.native_handle());
    held.reset();
  }
  boost::asio::posix::stream_descriptor desc;
  pid_t pid;
  std::shared_ptr<session_limits> held;
  bool reaped = false;
};

} // namespace

bool isolation_support::has_controller(std::string_view name) const {
  return std::find(cgroup_controllers.begin(), cgroup_controllers.end(), name)
           != cgroup_controllers.end()
         || !v1_directory(name).empty();
}

std::string isolation_support::v1_directory(std::string_view name) const {
  for (auto& [ctl, dir] : cgroup_v1)
    if (ctl == name)
      return dir;
  return {};
}

std::string isolation_support::missing(const isolation_limits& limits) const {
  std::vector<std::string> out;
  if (!namespaces)
    out.push_back(fmt::format("namespaces ({})", namespaces_detail));
  if (landlock_abi < min_landlock_abi)
    out.push_back(landlock_abi == 0
                    ? fmt::format("Landlock ({})", landlock_detail)
                    : fmt::format("Landlock ABI {} (the host has ABI {})",
                                  min_landlock_abi, landlock_abi));
  if (limits.memory > 0 && !has_controller("memory"))
    out.push_back("the cgroup memory controller, v2 or v1 (for a memory "
                  "limit)");
  if (limits.processes > 0 && !has_controller("pids"))
    out.push_back("the cgroup pids controller, v2 or v1 (for a process "
                  "limit)");
  std::string s;
  for (auto& x : out)
    s += (s.empty() ? "" : "; ") + x;
  return s;
}

const isolation_support& host_isolation() {
  static const isolation_support support = [] {
    isolation_support s;
    s.landlock_abi = probe_landlock(s.landlock_detail);
    s.cgroup_controllers = own_controllers();
    {
      seccomp_notif_sizes sizes{};
      s.syscall_watch
        = ::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0;
    }
    s.read_watch = read_guard::available();
    s.lookup_watch = read_guard::lookup_watch();
    for (auto ctl : {"memory", "pids"})
      if (!s.has_controller(ctl))
        if (auto dir = usable_v1_directory(ctl); !dir.empty())
          s.cgroup_v1.emplace_back(ctl, std::move(dir));
    auto* base = ::getenv("TMPDIR");
    std::string templ = fmt::format("{}/sandbox-probe-XXXXXX",
                                    base != nullptr && *base != '\0' ? base
                                                                     : "/tmp");
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      s.namespaces_detail = fmt::format("mkdtemp {}: {}", templ,
                                        std::strerror(errno));
      return s;
    }
    containment_spec spec;
    spec.working_directory = buf.data();
    spec.home_directory = buf.data();
    auto sess = contained_session::start(spec, /* ruleset */ false);
    if (sess)
      s.namespaces = true;
    else
      s.namespaces_detail = sess.error().message;
    sess = result<std::unique_ptr<contained_session>>{nullptr};
    ::rmdir(buf.data());
    return s;
  }();
  return support;
}

result<std::unique_ptr<contained_session>>
contained_session::start(const containment_spec& spec) {
  return start(spec, true);
}

result<std::unique_ptr<contained_session>>
contained_session::start(const containment_spec& spec, bool with_ruleset) {
#if !defined(__x86_64__)
  (void) spec, (void) with_ruleset;
  return error{errc::unsupported, "contained sessions exist for x86_64 only"};
#else
  auto& prog = the_init_program();
  if (prog.fd < 0)
    return error{errc::unsupported, prog.error};
  init_layout layout;
  layout.uid_map = fmt::format("{0} {0} 1\n", ::geteuid());
  layout.gid_map = fmt::format("{0} {0} 1\n", ::getegid());
  plan_mounts(spec, layout);
  unique_fd devnull{::open("/dev/null", O_RDWR | O_CLOEXEC)};
  if (!devnull)
    return make_errno_error(errno, "/dev/null");
  unique_fd cgroup;
  if (!spec.cgroup.empty()) {
    cgroup.reset(
      ::open(spec.cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!cgroup)
      return error{errc::io_error,
                   fmt::format("cannot open cgroup {}: {}", spec.cgroup,
                               std::strerror(errno))};
  }
  char name[] = "sandbox-init";
  char* argv[] = {name, nullptr};
  char* envp[] = {nullptr};
  init_plan plan;
  plan.uid_map = layout.uid_map.c_str();
  plan.uid_map_len = layout.uid_map.size();
  plan.gid_map = layout.gid_map.c_str();
  plan.gid_map_len = layout.gid_map.size();
  plan.masks = layout.masks.data();
  plan.nmasks = layout.masks.size();
  plan.keeps = layout.keeps.data();
  plan.nkeeps = layout.keeps.size();
  plan.devnull = devnull.get();
  plan.program = prog.fd;
  plan.argv = argv;
  plan.envp = envp;
  alignas(64) char stack[init_stack_size];
  int pidfd = -1;
  clone_args_v2 args;
  args.flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_NEWUSER
               | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
               | CLONE_NEWNET | (cgroup ? clone_into_cgroup : 0);
  args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
  // No SIGCHLD to the node: a host's waitpid(-1) never sees the init.
  args.exit_signal = 0;
  args.stack = reinterpret_cast<uintptr_t>(stack);
  args.stack_size = init_stack_size;
  args.cgroup = cgroup ? static_cast<uint64_t>(cgroup.get()) : 0;
  long pid;
  {
    detail::all_signals_blocked blocked;
    pid = detail::clone3_vm(args, init_main, &plan);
  }
  if (pid < 0)
    return error{errc::unsupported,
                 fmt::format("clone with new user, PID, mount, IPC, UTS and "
                             "network namespaces: {}",
                             std::strerror(static_cast<int>(-pid)))};
  std::unique_ptr<contained_session> s{new contained_session};
  s->pid_ = static_cast<pid_t>(pid);
  s->pidfd_.reset(pidfd);
  s->limits_ = spec.limits;
  s->cgroup_limits_ = spec.cgroup_limits;
  if (plan.stage != init_ok) {
    int err = plan.err;
    int stage = plan.stage;
    s.reset();
    return error{errc::unsupported,
                 fmt::format("{}: {}", init_stage_name(stage),
                             std::strerror(err))};
  }
  if (with_ruleset) {
    auto& host = host_isolation();
    if (host.landlock_abi < min_landlock_abi)
      return error{errc::unsupported, host.missing()};
    auto ruleset = make_ruleset(s->pid_, spec, host.landlock_abi);
    if (!ruleset)
      return ruleset.error();
    s->ruleset_ = std::move(*ruleset);
  }
  return s;
#endif
}

void contained_session::kill() noexcept {
  if (pidfd_)
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
}

contained_session::~contained_session() {
  if (!pidfd_)
    return;
  kill();
  // Without a reactor, or when it has ended already (a stop's sweep killed
  // it once the commands had ended): reaped here, without waiting.
  struct pollfd ended {
    pidfd_.get(), POLLIN, 0
  };
  if (reactor_ == nullptr || ::poll(&ended, 1, 0) == 1) {
    kill_and_reap(pid_, pidfd_.get());
    return;
  }
  // The init ends once the node has reaped every command of the session:
  // wait for that on the reactor, not here.
  auto pending = std::make_shared<pending_init_reap>(
    reactor_->context(), pid_, std::move(pidfd_), std::move(cgroup_limits_));
  pending->desc.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                           [pending](const boost::system::error_code&) {
                             pending->reap();
                           });
}

result<std::shared_ptr<session_limits>>
session_limits::make(const isolation_limits& limits,
                     const std::string& v2_enable_from,
                     const std::string& v2_dir, const std::string& session_id) {
  std::shared_ptr<session_limits> out{new session_limits};
  out->limits_ = limits;
  auto& host = host_isolation();
  // What v2 gives goes on the session's cgroup.
  isolation_limits on_v2;
  std::vector<std::pair<const char*, std::string>> on_v1;
  for (auto [ctl, value] : {std::pair{"memory", limits.memory},
                            std::pair{"pids", limits.processes}}) {
    if (value == 0)
      continue;
    bool v2 = !v2_dir.empty()
              && std::find(host.cgroup_controllers.begin(),
                           host.cgroup_controllers.end(), ctl)
                   != host.cgroup_controllers.end();
    if (v2) {
      (ctl == std::string_view{"memory"} ? on_v2.memory : on_v2.processes)
        = value;
      (ctl == std::string_view{"memory"} ? out->memory_events_
                                         : out->pids_events_)
        = v2_dir
          + (ctl == std::string_view{"memory"} ? "/memory.events"
                                               : "/pids.events");
      continue;
    }
    auto base = host.v1_directory(ctl);
    if (base.empty())
      return error{errc::unsupported,
                   fmt::format("the cgroup {} controller, v2 or v1", ctl)};
    on_v1.emplace_back(ctl, base);
  }
  if (auto ok = apply_cgroup_limits(v2_enable_from, v2_dir, on_v2); !ok)
    return ok.error();
  for (auto& [ctl, base] : on_v1) {
    bool memory = ctl == std::string_view{"memory"};
    auto dir = fmt::format("{}/sandbox-{}", base, session_id);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      return error{errc::io_error, fmt::format("cannot make cgroup {}: {}", dir,
                                               std::strerror(errno))};
    out->v1_dirs_.push_back(dir);
    auto value = std::to_string(memory ? limits.memory : limits.processes);
    auto file = dir + (memory ? "/memory.limit_in_bytes" : "/pids.max");
    unique_fd fd{::open(file.c_str(), O_WRONLY | O_CLOEXEC)};
    if (!fd || ::write(fd.get(), value.data(), value.size()) < 0)
      return error{errc::io_error,
                   fmt::format("cannot write {} to {}: {}", value, file,
                               std::strerror(errno))};
    auto procs = dir + "/cgroup.procs";
    unique_fd join{::open(procs.c_str(), O_WRONLY | O_CLOEXEC)};
    if (!join)
      return error{errc::io_error, fmt::format("cannot open {}: {}", procs,
                                               std::strerror(errno))};
    out->join_.push_back(std::move(join));
    (memory ? out->memory_events_ : out->pids_events_)
      = dir + (memory ? "/memory.oom_control" : "/pids.events");
  }
  return out;
}

session_limits::~session_limits() {
  // Nothing of the session runs any more (the init was reaped): the v1
  // directories are empty.
  join_.clear();
  for (auto it = v1_dirs_.rbegin(); it != v1_dirs_.rend(); ++it)
    if (::rmdir(it->c_str()) != 0 && errno != ENOENT)
      log::logger()->warn("cannot remove cgroup {}: {}", *it,
                          std::strerror(errno));
}

session_limits::counters session_limits::read() const {
  counters c;
  std::string text;
  if (!memory_events_.empty() && read_small_file(memory_events_, text))
    c.oom_kills = counter_in(text, "oom_kill");
  if (!pids_events_.empty() && read_small_file(pids_events_, text))
    c.forks_refused = counter_in(text, "max");
  return c;
}

std::vector<int> session_limits::join_fds() const {
  std::vector<int> out;
  for (auto& fd : join_)
    out.push_back(fd.get());
  return out;
}

result<void> apply_cgroup_limits(const std::string& enable_from,
                                 const std::string& dir,
                                 const isolation_limits& limits) {
  std::vector<std::pair<std::string, uint64_t>> wanted;
  if (limits.memory > 0)
    wanted.emplace_back("memory", limits.memory);
  if (limits.processes > 0)
    wanted.emplace_back("pids", limits.processes);
  if (wanted.empty())
    return {};
  if (!inside(dir, enable_from) || dir == enable_from)
    return error{errc::invalid_argument,
                 fmt::format("cgroup {} is not below {}", dir, enable_from)};
  auto write = [](const std::string& path,
                  const std::string& text) -> result<void> {
    unique_fd fd{::open(path.c_str(), O_WRONLY | O_CLOEXEC)};
    if (!fd || ::write(fd.get(), text.data(), text.size()) < 0)
      return error{errc::io_error,
                   fmt::format("cannot write {:?} to {}: {}", text, path,
                               std::strerror(errno))};
    return {};
  };
  // Each directory from `enable_from` down to the parent of `dir` hands
  // the controllers to its children.
  std::string at = enable_from;
  while (at != dir) {
    for (auto& [ctl, value] : wanted)
      if (auto ok = write(at + "/cgroup.subtree_control", "+" + ctl); !ok)
        return error{errc::unsupported,
                     fmt::format("the cgroup v2 {} controller: {}", ctl,
                                 ok.error().message)};
    auto next = dir.find('/', at.size() + 1);
    at = next == std::string::npos ? dir : dir.substr(0, next);
  }
  for (auto& [ctl, value] : wanted)
    if (auto ok = write(dir + (ctl == "memory" ? "/memory.max" : "/pids.max"),
                        std::to_string(value));
        !ok)
      return ok.error();
  return {};
}

} // namespace sandbox
