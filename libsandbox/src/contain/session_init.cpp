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
#include <chrono>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "contain/init_program.hpp"
#include "contain/init_view.hpp"
#include "contain/session_identity.hpp"
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
// The init is made by clone3 with every new namespace and CLONE_VM: like a
// command's child (process/launcher.cpp) it shares the node's memory until
// its exec, so its set-up makes system calls only and reads a plan the
// parent prepared. Without CLONE_VFORK: with ids of its own the node writes
// the init's maps and makes its id-mapped mounts while it waits (a process
// may map no id but its own for itself), so the node learns of the end of
// the set-up from a socket pair instead: the init's end is close-on-exec,
// and the node reads end-of-file once the init has executed or exited
// (the kernel drops the shared memory before either closes it).

const char* init_stage_name(int stage) {
  switch (stage) {
    case init_deathsig:
      return "PR_SET_PDEATHSIG";
    case init_sync:
      return "cannot receive the id-mapped mounts from the node";
    case init_ids:
      return "cannot become the session's own uid and gid";
    case init_setgroups:
      return "cannot write /proc/self/setgroups";
    case init_uid_map:
      return "cannot write the uid map";
    case init_gid_map:
      return "cannot write the gid map";
    case init_private:
      return "cannot make the mounts private";
    case init_open_tree:
      return "cannot clone a mount of the view";
    case init_attr:
      return "cannot make a mount of the view nosuid,nodev";
    case init_root:
      return "cannot mount the new root (a tmpfs)";
    case init_mkdir:
      return "cannot make a mount point in the new root";
    case init_move_mount:
      return "cannot mount a directory of the view";
    case init_tmpfs:
      return "cannot mount a tmpfs of the view";
    case init_symlink:
      return "cannot make a symbolic link of the view";
    case init_proc:
      return "cannot mount proc";
    case init_devpts:
      return "cannot mount a devpts of its own on /dev/pts";
    case init_pivot:
      return "cannot pivot_root into the new root";
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

struct init_plan {
  const char* uid_map = nullptr;
  size_t uid_map_len = 0;
  const char* gid_map = nullptr;
  size_t gid_map_len = 0;
  view_mount* mounts = nullptr;
  size_t nmounts = 0;
  int devnull = -1;
  int program = -1;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  /// The init's end of the socket pair to the node, and the node's end,
  /// whose copy the init closes first (so that the node's end of it tells
  /// when the node is gone).
  int sync = -1;
  int node_end = -1;
  /// The node writes the maps and sends the `idmap` mounts (`nidmap` of
  /// them, in plan order) over `sync`, into the control buffer `cmsg`.
  bool own_ids = false;
  size_t nidmap = 0;
  char* cmsg = nullptr;
  size_t cmsg_len = 0;
  /// Written by a failing init before it exits; read by the node after the
  /// end-of-file on its end of `sync`.
  int err = 0;
  int stage = init_ok;
};

/// Waits for the node's one message: the id-mapped mounts, each given to
/// its mount of the plan.
SANDBOX_CHILD_FN long receive_trees(init_plan* p) {
  char byte = 0;
  struct iovec iov;
  iov.iov_base = &byte;
  iov.iov_len = 1;
  struct msghdr msg;
  for (size_t i = 0; i < sizeof(msg); ++i)
    reinterpret_cast<volatile char*>(&msg)[i] = 0;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = p->cmsg;
  msg.msg_controllen = p->cmsg_len;
  long r = child_sys(SYS_recvmsg, p->sync, reinterpret_cast<long>(&msg),
                     MSG_CMSG_CLOEXEC);
  if (r < 0)
    return r;
  if (r == 0)
    return -ECONNRESET;
  if (p->nidmap == 0)
    return 0;
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (c == nullptr || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS
      || c->cmsg_len != CMSG_LEN(p->nidmap * sizeof(int)))
    return -EPROTO;
  auto* fds = reinterpret_cast<const int*>(CMSG_DATA(c));
  size_t k = 0;
  for (size_t i = 0; i < p->nmounts && k < p->nidmap; ++i)
    if (p->mounts[i].kind == view_mount::bind && p->mounts[i].idmap
        && p->mounts[i].tree < 0)
      p->mounts[i].tree = fds[k++];
  return 0;
}

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
  child_sys(SYS_close, p->node_end);
  if ((r = child_sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL)) < 0) {
    stage = init_deathsig;
    goto fail;
  }
  if (p->own_ids) {
    // The node maps the session's own ids and makes the id-mapped mounts
    // with this user namespace; nothing is done here before they came.
    if ((r = receive_trees(p)) < 0) {
      stage = init_sync;
      goto fail;
    }
    // The maps do not change the init's ids: it is still the node's uid,
    // which the namespace does not map (nothing could be made in its own
    // mounts). It becomes the session's root. Its supplementary groups stay
    // the node's (setgroups is denied in the namespace); it runs nothing
    // but its own program, and commands drop theirs before they enter.
    if ((r = child_sys(SYS_setresgid, 0, 0, 0)) < 0
        || (r = child_sys(SYS_setresuid, 0, 0, 0)) < 0) {
      stage = init_ids;
      goto fail;
    }
    // A change of ids clears the parent-death signal: set again, then
    // the node's end of the socket pair tells whether the node died in
    // between (it holds that end until the init has executed).
    if ((r = child_sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL)) < 0) {
      stage = init_deathsig;
      goto fail;
    }
    struct pollfd alive;
    alive.fd = p->sync;
    alive.events = POLLIN;
    alive.revents = 0;
    if (child_sys(SYS_poll, reinterpret_cast<long>(&alive), 1, 0) > 0
        && (alive.revents & (POLLHUP | POLLERR)) != 0) {
      r = -ECONNRESET;
      stage = init_deathsig;
      goto fail;
    }
  } else {
    // The maps name the node's own ids only, which a process may write
    // for its own new user namespace without any privilege outside it.
    if ((r = write_file("/proc/self/setgroups", "deny", 4)) < 0) {
      stage = init_setgroups;
      goto fail;
    }
    if ((r = write_file("/proc/self/uid_map", p->uid_map, p->uid_map_len))
        < 0) {
      stage = init_uid_map;
      goto fail;
    }
    if ((r = write_file("/proc/self/gid_map", p->gid_map, p->gid_map_len))
        < 0) {
      stage = init_gid_map;
      goto fail;
    }
  }
  // Nothing mounted here propagates back to the host.
  if ((r = child_sys(SYS_mount, 0, reinterpret_cast<long>("/"), 0,
                     MS_REC | MS_PRIVATE, 0))
      < 0) {
    stage = init_private;
    goto fail;
  }
  if ((r = build_view(p->mounts, p->nmounts, stage)) < 0)
    goto fail;
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
  __atomic_store_n(&p->stage, stage, __ATOMIC_RELEASE);
  child_sys(SYS_exit, 127);
  return 127;
}

constexpr size_t init_stack_size = 32 * 1024;

/// How long the node waits for an init's set-up.
constexpr int init_deadline_ms = 10000;

/// Waits until the init closed its end of the socket pair (executed or
/// exited) or the deadline passed (false).
bool wait_for_setup(int node_end) {
  auto until = std::chrono::steady_clock::now()
               + std::chrono::milliseconds(init_deadline_ms);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  until - std::chrono::steady_clock::now())
                  .count();
    if (left <= 0)
      return false;
    struct pollfd pf {
      node_end, POLLIN, 0
    };
    int n = ::poll(&pf, 1, static_cast<int>(left));
    if (n < 0 && errno != EINTR)
      return true;
    if (n <= 0)
      continue;
    char byte;
    auto got = ::recv(node_end, &byte, 1, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR))
      return true;
  }
}

/// Sends the id-mapped mounts `trees` to the init over `node_end`.
result<void> send_trees(int node_end, const std::vector<unique_fd>& trees) {
  char byte = 1;
  struct iovec iov {
    &byte, 1
  };
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(trees.size() * sizeof(int)));
  if (!trees.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    auto* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(trees.size() * sizeof(int));
    auto* fds = reinterpret_cast<int*>(CMSG_DATA(c));
    for (size_t i = 0; i < trees.size(); ++i)
      fds[i] = trees[i].get();
  }
  if (::sendmsg(node_end, &msg, MSG_NOSIGNAL) != 1)
    return make_errno_error(errno, "cannot send the id-mapped mounts to the "
                                   "session's init");
  return {};
}

} // namespace

result<started_init> start_init(const containment_spec& spec,
                                const id_lease* ids) {
#if !defined(__x86_64__)
  (void) spec, (void) ids;
  return error{errc::unsupported, "contained sessions exist for x86_64 only"};
#else
  auto& prog = the_init_program();
  if (prog.fd < 0)
    return error{errc::unsupported, prog.error};
  auto uid_map = fmt::format("{0} {0} 1\n", ::geteuid());
  auto gid_map = fmt::format("{0} {0} 1\n", ::getegid());
  view_plan view;
  plan_view(spec, view, ids != nullptr);
  // With ids of its own the init reaches nothing the session's uid may not
  // (it owns no host file): the node clones what the view takes from the
  // host before the clone, and the init inherits the descriptors. The
  // id-mapped ones need the init's user namespace: they come after.
  std::vector<unique_fd> trees;
  size_t nidmap = 0;
  if (ids != nullptr)
    for (auto& m : view.mounts) {
      if (m.kind != view_mount::bind || m.source == nullptr || m.tree >= 0)
        continue;
      if (m.idmap) {
        ++nidmap;
        continue;
      }
      auto tree = cloned_tree(m.source, m.attr, m.recursive);
      if (!tree)
        return tree.error();
      m.tree = tree->get();
      trees.push_back(std::move(*tree));
    }
  unique_fd node_end;
  unique_fd init_end;
  {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
      return make_errno_error(errno, "cannot start a session's init: "
                                     "socketpair");
    node_end.reset(pair[0]);
    init_end.reset(pair[1]);
  }
  std::vector<char> control(CMSG_SPACE(nidmap * sizeof(int)));
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
  plan.uid_map = uid_map.c_str();
  plan.uid_map_len = uid_map.size();
  plan.gid_map = gid_map.c_str();
  plan.gid_map_len = gid_map.size();
  plan.mounts = view.mounts.data();
  plan.nmounts = view.mounts.size();
  plan.devnull = devnull.get();
  plan.program = prog.fd;
  plan.argv = argv;
  plan.envp = envp;
  plan.sync = init_end.get();
  plan.node_end = node_end.get();
  plan.own_ids = ids != nullptr;
  plan.nidmap = nidmap;
  plan.cmsg = control.data();
  plan.cmsg_len = nidmap > 0 ? control.size() : 0;
  // The init runs on this stack until its exec: this frame is not left
  // before the init has executed, exited or been reaped.
  alignas(64) char stack[init_stack_size];
  int pidfd = -1;
  clone_args_v2 args;
  // A cgroup namespace of its own, rooted at the init's cgroup: a command
  // sees its cgroup relative to it (`0::/`, `0::/../e-1`), not the host's
  // path with the node's pid and other sessions' ids. The node, in its own
  // namespace, still reads the full paths in /proc/<pid>/cgroup.
  args.flags = CLONE_VM | CLONE_PIDFD | CLONE_NEWUSER | CLONE_NEWPID
               | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET
               | CLONE_NEWCGROUP | (cgroup ? clone_into_cgroup : 0);
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
  init_end.reset();
  auto abandon = [&out](error e) {
    ::syscall(SYS_pidfd_send_signal, out.pidfd.get(), SIGKILL, nullptr, 0);
    reap(out.pid);
    return e;
  };
  if (ids != nullptr) {
    if (auto ok = write_id_maps(out.pid, ids->id()); !ok)
      return abandon(ok.error());
    auto ns = fmt::format("/proc/{}/ns/user", out.pid);
    unique_fd userns{::open(ns.c_str(), O_RDONLY | O_CLOEXEC)};
    if (!userns)
      return abandon(make_errno_error(errno, ns));
    std::vector<unique_fd> idmapped;
    for (auto& m : view.mounts) {
      if (m.kind != view_mount::bind || !m.idmap || m.source == nullptr
          || m.tree >= 0)
        continue;
      auto tree = idmapped_tree(m.source, m.attr, userns.get());
      if (!tree)
        return abandon(tree.error());
      idmapped.push_back(std::move(*tree));
    }
    if (auto ok = send_trees(node_end.get(), idmapped); !ok)
      return abandon(ok.error());
  }
  if (!wait_for_setup(node_end.get()))
    return abandon(error{errc::unsupported,
                         fmt::format("the session's init did not finish its "
                                     "set-up within {} ms",
                                     init_deadline_ms)});
  if (__atomic_load_n(&plan.stage, __ATOMIC_ACQUIRE) != init_ok) {
    // It exited with 127.
    reap(out.pid);
    return error{errc::unsupported,
                 fmt::format("{}: {}", init_stage_name(plan.stage),
                             std::strerror(plan.err))};
  }
  return out;
#endif
}

} // namespace sandbox::detail
