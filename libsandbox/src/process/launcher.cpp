#include "sandbox/process/launcher.hpp"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "io/fd_message.hpp"
#include "process/child_syscall.hpp"
#include "process/launch_child.hpp"
#include "process/vm_child.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/validation.hpp"

extern char** environ;

namespace sandbox {

using detail::all_signals_blocked;
using detail::child_failure;
using detail::child_main;
using detail::child_plan;
using detail::child_stack_size;
using detail::child_sys;
using detail::clone3_child;
using detail::clone3_vm;
using detail::clone_args_v2;
using detail::clone_into_cgroup;
using detail::exec_arrays;
using detail::launch_contained;
using detail::reap;
using detail::stage_none;

namespace {

// Pipes are created close-on-exec: only the ends dup2'ed onto 0, 1 and 2
// survive the exec, so a child never holds another child's pipe open (which
// would delay that child's EOF for as long as this one lives).
result<void> make_pipe(unique_fd& read_end, unique_fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return make_errno_error(errno, "pipe2");
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return {};
}

/// A pipe end or /dev/null that the child dup's onto 0-2 must not be one of
/// 0-2 itself (a host that closed its stdin makes pipe2 return 0): the
/// child's dup3 onto it would fail, or clobber another end.
result<void> above_stdio(unique_fd& fd) {
  if (!fd || fd.get() > 2)
    return {};
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0)
    return make_errno_error(errno, "fcntl F_DUPFD_CLOEXEC");
  fd.reset(moved);
  return {};
}

/// A new pseudo-terminal of `size`: its master and its peer (the child's
/// end), both close-on-exec and neither a controlling terminal yet. Made
/// in the devpts `pts_dir` (a contained session's own), or on the host's
/// `/dev/ptmx` when -1. The peer comes from the master (`TIOCGPTPEER`), not
/// from a path under /dev/pts.
result<void> open_terminal(int pts_dir, const terminal_size& size,
                           unique_fd& master, unique_fd& peer) {
  auto where = pts_dir >= 0 ? "the session's /dev/pts/ptmx" : "/dev/ptmx";
  master.reset(
    pts_dir >= 0
      ? ::openat(pts_dir, "ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW)
      : ::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master)
    return make_errno_error(errno,
                            fmt::format("cannot make a terminal: {}", where));
  int unlock = 0;
  struct winsize ws = {};
  ws.ws_row = size.rows;
  ws.ws_col = size.cols;
  if (::ioctl(master.get(), TIOCSPTLCK, &unlock) != 0
      || ::ioctl(master.get(), TIOCSWINSZ, &ws) != 0)
    return make_errno_error(errno, fmt::format("cannot set up a terminal of {}",
                                               where));
  // UTF-8 input: a line editor's backspace erases a whole character.
  struct termios t;
  if (::tcgetattr(master.get(), &t) == 0) {
    t.c_iflag |= IUTF8;
    (void) ::tcsetattr(master.get(), TCSANOW, &t);
  }
  peer.reset(::ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!peer)
    return make_errno_error(errno,
                            fmt::format("cannot open the peer of a terminal "
                                        "of {}",
                                        where));
  return {};
}

/// Step: the child's 0, 1 and 2 (`stdin_r`, `stdout_w`, `stderr_w`) and
/// our ends in `child`. Pipes, and /dev/null for a stdin nobody writes;
/// with a terminal, its peer as all three (`stdout_w`), its master as our
/// output and stdin ends.
result<void> make_stdio(const launch_spec& spec, launched_child& child,
                        unique_fd& stdin_r, unique_fd& stdout_w,
                        unique_fd& stderr_w) {
  if (spec.terminal) {
    if (spec.contain.ns_pidfd >= 0 && spec.contain.pts_dir < 0)
      return error{errc::io_error,
                   fmt::format("cannot start {} with a terminal: its "
                               "contained session has no /dev/pts of its own",
                               spec.executable)};
    if (auto ok = open_terminal(spec.contain.pts_dir, *spec.terminal,
                                child.stdout_r, stdout_w);
        !ok)
      return ok.error();
    if (auto ok = above_stdio(stdout_w); !ok)
      return ok.error();
    child.stdin_w.reset(::fcntl(child.stdout_r.get(), F_DUPFD_CLOEXEC, 0));
    if (!child.stdin_w)
      return make_errno_error(errno, "fcntl F_DUPFD_CLOEXEC");
    return {};
  }
  if (spec.pipe_stdin) {
    if (auto ok = make_pipe(stdin_r, child.stdin_w); !ok)
      return ok.error();
  } else if (spec.dev_null <= 2) {
    auto null = open_dev_null();
    if (!null)
      return null.error();
    stdin_r = std::move(*null);
  }
  if (auto ok = make_pipe(child.stdout_r, stdout_w); !ok)
    return ok.error();
  if (auto ok = make_pipe(child.stderr_r, stderr_w); !ok)
    return ok.error();
  for (auto* fd : {&stdin_r, &stdout_w, &stderr_w})
    if (auto ok = above_stdio(*fd); !ok)
      return ok.error();
  return {};
}

/// Explains E2BIG: the kernel has a limit per string and one for all of
/// them together.
error too_long(const launch_spec& spec, const exec_arrays& arrays) {
  size_t bytes = 0;
  for (auto* arg : arrays.argv)
    bytes += arg != nullptr ? std::strlen(arg) + 1 + sizeof(char*) : 0;
  for (auto* kv : arrays.envp)
    bytes += kv != nullptr ? std::strlen(kv) + 1 + sizeof(char*) : 0;
  return error{errc::invalid_argument,
               fmt::format("cannot start {}: {}: the arguments and "
                           "environment take {} bytes; the kernel allows {} "
                           "bytes in all (ARG_MAX) and {} bytes per string "
                           "(MAX_ARG_STRLEN)",
                           spec.executable, std::strerror(E2BIG), bytes,
                           ::sysconf(_SC_ARG_MAX), max_argument_bytes())};
}

// -- clone --------------------------------------------------------------------

/// Set once clone3 answered ENOSYS (an old kernel, or a seccomp filter that
/// refuses it so that libc falls back): never tried again.
std::atomic<bool> clone3_refused{false};
std::atomic<bool> clone_forced{false};

/// The portable path: libc's clone (the child joins its cgroup itself).
long clone_child(child_plan& plan, int& pidfd, char* stack) {
  int rc = ::clone(child_main, stack + child_stack_size,
                   CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &plan,
                   reinterpret_cast<pid_t*>(&pidfd));
  return rc < 0 ? -errno : rc;
}

} // namespace

namespace detail {

SANDBOX_CHILD_FN int child_main(void* arg) {
  auto* p = static_cast<child_plan*>(arg);
  long r = 0;
  int stage = stage_none;
  detail::reset_signal_dispositions();
  if (p->ns_pidfd >= 0 && !p->inner)
    return enter_session(p);
  if (p->direct
      && (r = join_session(p,
                           CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC
                             | CLONE_NEWUTS | CLONE_NEWNET | CLONE_NEWCGROUP,
                           stage))
           < 0)
    goto fail;
  // Its own process group (pgid == pid): the fallback mode's tracking and
  // `kill` of a spawned process reach the whole group. A contained command
  // leads a new session as well, so that it has no controlling terminal
  // (none to open as /dev/tty, none to type into): its group is still its
  // pid.
  if ((r = p->inner || p->terminal ? child_sys(SYS_setsid)
                                   : child_sys(SYS_setpgid, 0, 0))
      < 0) {
    stage = stage_pgid;
    goto fail;
  }
  // Dies with the launching thread (see launcher.hpp).
  if ((r = child_sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL)) < 0) {
    stage = stage_deathsig;
    goto fail;
  }
  if (child_sys(SYS_getppid) != p->parent) {
    r = -ESRCH;
    stage = stage_orphaned;
    goto fail;
  }
  if ((r = child_sys(SYS_dup3, p->fd_in, 0, 0)) < 0
      || (r = child_sys(SYS_dup3, p->fd_out, 1, 0)) < 0
      || (r = child_sys(SYS_dup3, p->fd_err, 2, 0)) < 0) {
    stage = stage_stdio;
    goto fail;
  }
  // A terminal becomes the controlling terminal of the session it leads:
  // job control, ^C to the foreground group, SIGWINCH on a resize.
  if (p->terminal && (r = child_sys(SYS_ioctl, 0, TIOCSCTTY, 0)) < 0) {
    stage = stage_terminal;
    goto fail;
  }
  if ((r = child_sys(SYS_chdir, reinterpret_cast<long>(p->cwd))) < 0) {
    stage = stage_cwd;
    goto fail;
  }
  if (p->cgroup_procs >= 0
      && (r = child_sys(SYS_write, p->cgroup_procs, reinterpret_cast<long>("0"),
                        1))
           < 0) {
    stage = stage_cgroup;
    goto fail;
  }
  if (p->inner && (r = contained_steps(p, stage)) < 0)
    goto fail;
  // Descriptors a host application opened without O_CLOEXEC must not leak
  // into children either (a kernel without close_range: exec still closes
  // ours, which are all close-on-exec).
  child_sys(SYS_close_range, 3, ~0L, 0);
  {
    uint64_t none = 0;
    child_sys(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&none), 0,
              8);
  }
  r = child_sys(SYS_execve, reinterpret_cast<long>(p->path),
                reinterpret_cast<long>(p->argv),
                reinterpret_cast<long>(p->envp));
  stage = stage_exec;
fail:
  p->err = static_cast<int>(-r);
  p->stage = stage;
  child_sys(SYS_exit, 127);
  return 127;
}

/// clone3 into `cgroup_fd` (-1: none); the pid, or -errno (-ENOSYS where
/// this path does not exist).
long clone3_child(child_plan& plan, int cgroup_fd, int& pidfd, char* stack) {
#if defined(__x86_64__)
  clone_args_v2 args;
  args.flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD
               | (cgroup_fd >= 0 ? clone_into_cgroup : 0);
  args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<uintptr_t>(stack);
  args.stack_size = child_stack_size;
  args.cgroup = cgroup_fd >= 0 ? static_cast<uint64_t>(cgroup_fd) : 0;
  return clone3_vm(args, child_main, &plan);
#else
  (void) plan, (void) cgroup_fd, (void) pidfd, (void) stack;
  return -ENOSYS;
#endif
}

/// The error of a child that failed before or at its exec.
error child_failure(const child_plan& plan, const launch_spec& spec,
                    const exec_arrays& arrays) {
  auto err = plan.err;
  switch (plan.stage) {
    case stage_exec:
      if (err == E2BIG)
        return too_long(spec, arrays);
      return error{errc_from_errno(err),
                   fmt::format("cannot start {}: {}", spec.executable,
                               std::strerror(err))};
    case stage_cwd: {
      // The child's chdir is the one check of the working directory (no
      // stat before each launch); what a failure means is looked at here,
      // on the failure's path only.
      struct stat st;
      if (err == ENOTDIR && ::stat(spec.cwd.c_str(), &st) == 0
          && !S_ISDIR(st.st_mode))
        return error{errc::path_not_found,
                     fmt::format("working directory is not a directory: {}",
                                 spec.cwd)};
      if (err == ENOENT || err == ENOTDIR)
        return error{errc::path_not_found,
                     fmt::format("working directory does not exist: {}",
                                 spec.cwd)};
      return make_errno_error(err,
                              fmt::format("working directory {}", spec.cwd));
    }
    case stage_cgroup:
      return error{errc::io_error,
                   fmt::format("cannot start {} in cgroup {}: {}",
                               spec.executable, spec.cgroup,
                               std::strerror(err))};
    case stage_terminal:
      return error{errc::io_error,
                   fmt::format("cannot start {}: cannot make its terminal "
                               "its controlling terminal: {}",
                               spec.executable, std::strerror(err))};
    case stage_setns:
    case stage_clone_inner:
    case stage_no_new_privs:
    case stage_rlimit:
    case stage_landlock:
    case stage_seccomp:
    case stage_identity:
      return error{errc::io_error,
                   fmt::format("cannot start {} in its contained session: "
                               "{}: {}",
                               spec.executable,
                               contained_stage_name(plan.stage),
                               std::strerror(err))};
    default:
      return error{errc::io_error,
                   fmt::format("cannot start {}: child setup step {}: {}",
                               spec.executable, plan.stage,
                               std::strerror(err))};
  }
}

} // namespace detail

result<launched_child> launch(const launch_spec& spec) {
  launched_child child;
  unique_fd stdin_r;
  unique_fd stdout_w;
  unique_fd stderr_w;
  if (auto ok = make_stdio(spec, child, stdin_r, stdout_w, stderr_w); !ok)
    return ok.error();
  int cgroup = spec.cgroup_held ? spec.cgroup_held->dir_fd() : -1;
  unique_fd opened_cgroup;
  if (cgroup < 0) {
    auto opened = detail::open_cgroup_dir(spec.cgroup);
    if (!opened)
      return opened.error();
    opened_cgroup = std::move(*opened);
    cgroup = opened_cgroup.get();
  }
  exec_arrays arrays{spec};
  child_plan plan;
  plan.path = spec.executable.c_str();
  plan.argv = arrays.argv.data();
  plan.envp = arrays.envp.data();
  plan.cwd = spec.cwd.c_str();
  plan.fd_out = stdout_w.get();
  plan.fd_in = spec.terminal ? plan.fd_out
               : stdin_r     ? stdin_r.get()
                             : spec.dev_null;
  plan.fd_err = spec.terminal ? plan.fd_out : stderr_w.get();
  plan.terminal = spec.terminal.has_value();
  plan.parent = ::getpid();
  alignas(64) char stack[child_stack_size];
  int pidfd = -1;
  long pid = -ENOSYS;
  if (spec.contain.ns_pidfd >= 0)
    return launch_contained(spec, plan, std::move(child), cgroup, stack,
                            arrays);
  if (!clone_forced.load() && !clone3_refused.load()) {
    all_signals_blocked blocked;
    pid = clone3_child(plan, cgroup, pidfd, stack);
  }
  if (pid == -ENOSYS) {
#if defined(__x86_64__)
    if (!clone_forced.load())
      clone3_refused = true;
#endif
    unique_fd procs;
    if (cgroup >= 0) {
      auto path = spec.cgroup + "/cgroup.procs";
      procs.reset(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
      if (!procs)
        return make_errno_error(errno, path);
      plan.cgroup_procs = procs.get();
    }
    all_signals_blocked blocked;
    pid = clone_child(plan, pidfd, stack);
  }
  if (pid < 0) {
    auto err = static_cast<int>(-pid);
    if (cgroup >= 0)
      return error{errc::io_error,
                   fmt::format("cannot start {} in cgroup {}: {}",
                               spec.executable, spec.cgroup,
                               std::strerror(err))};
    return make_errno_error(err, fmt::format("cannot start {}: clone",
                                             spec.executable));
  }
  unique_fd pidfd_owner{pidfd};
  if (plan.stage != stage_none) {
    // It exited with 127; the pid stays ours until it is reaped here.
    reap(static_cast<pid_t>(pid));
    return child_failure(plan, spec, arrays);
  }
  child.pid = static_cast<pid_t>(pid);
  // clone's pidfd is close-on-exec already.
  child.pidfd = std::move(pidfd_owner);
  return child;
}

result<unique_fd> open_dev_null() {
  unique_fd null{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  if (!null)
    return make_errno_error(errno, "/dev/null");
  if (auto ok = above_stdio(null); !ok)
    return error{ok.error().code,
                 fmt::format("/dev/null: {}", ok.error().message)};
  return null;
}

std::string_view launch_method() noexcept {
#if defined(__x86_64__)
  if (!clone_forced.load() && !clone3_refused.load())
    return "clone3";
#endif
  return "clone";
}

void force_clone_fallback(bool on) noexcept {
  clone_forced = on;
}

env_map current_environment() {
  env_map result;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv{*e};
    auto eq = kv.find('=');
    if (eq == std::string_view::npos)
      continue;
    result.emplace(std::string{kv.substr(0, eq)},
                   std::string{kv.substr(eq + 1)});
  }
  return result;
}

} // namespace sandbox
