#include "contain/session_init.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/mount.h>
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

#include <fmt/format.h>

#include "contain/init_program.hpp"
#include "core/paths.hpp"
#include "process/child_syscall.hpp"
#include "process/vm_child.hpp"

namespace sandbox::detail {

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
// CLONE_VFORK: like a command's child (process/launcher.cpp) it shares the
// node's memory until its exec, so its set-up makes system calls only and reads
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
  init_devpts,
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
    case init_devpts:
      return "cannot mount a devpts of its own on /dev/pts";
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
/// node's moved over one (`tree`; lookup_server.hpp).
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
  // A devpts instance of its own on /dev/pts: the host's terminals (the
  // one the CLI runs in, which a command could otherwise open and read)
  // are not in the view, and /dev/ptmx, which opens the devpts beside it,
  // makes terminals of this instance only.
  if ((r = child_sys(SYS_mount, reinterpret_cast<long>("devpts"),
                     reinterpret_cast<long>("/dev/pts"),
                     reinterpret_cast<long>("devpts"), MS_NOSUID | MS_NOEXEC,
                     reinterpret_cast<long>("newinstance,ptmxmode=0666,"
                                            "mode=0620")))
      < 0) {
    stage = init_devpts;
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

} // namespace

result<started_init> start_init(const containment_spec& spec) {
#if !defined(__x86_64__)
  (void) spec;
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
  auto opened = detail::open_cgroup_dir(spec.cgroup);
  if (!opened)
    return opened.error();
  unique_fd cgroup = std::move(*opened);
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
  // A cgroup namespace of its own, rooted at the init's cgroup: a command
  // sees its cgroup relative to it (`0::/`, `0::/../e-1`), not the host's
  // path with the node's pid and other sessions' ids. The node, in its own
  // namespace, still reads the full paths in /proc/<pid>/cgroup.
  args.flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_NEWUSER
               | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
               | CLONE_NEWNET | CLONE_NEWCGROUP
               | (cgroup ? clone_into_cgroup : 0);
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
                 fmt::format("clone with new user, PID, mount, IPC, UTS, "
                             "network and cgroup namespaces: {}",
                             std::strerror(static_cast<int>(-pid)))};
  started_init out;
  out.pid = static_cast<pid_t>(pid);
  out.pidfd.reset(pidfd);
  if (plan.stage != init_ok) {
    // It exited with 127 before the clone returned (CLONE_VFORK).
    reap(out.pid);
    return error{errc::unsupported,
                 fmt::format("{}: {}", init_stage_name(plan.stage),
                             std::strerror(plan.err))};
  }
  return out;
#endif
}

} // namespace sandbox::detail
