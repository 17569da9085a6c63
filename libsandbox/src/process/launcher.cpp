#include "sandbox/launcher.hpp"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

#include "process/child_syscall.hpp"
#include "fd_message.hpp"
#include "process/vm_child.hpp"
#include "sandbox/validation.hpp"

extern char** environ;

namespace sandbox {

using detail::all_signals_blocked;
using detail::child_sys;
using detail::clone3_vm;
using detail::clone_args_v2;
using detail::clone_into_cgroup;
using detail::reap;

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

// -- the child ----------------------------------------------------------------
//
// Between clone and exec the child shares the parent's memory (CLONE_VM)
// while the launching thread waits (CLONE_VFORK). It makes system calls
// only: no libc function (errno and libc's locks belong to the parent's
// thread, whose TLS the child shares) and no sanitizer hook (their state
// is the parent thread's too). Everything it reads was prepared by the
// parent in a `child_plan`; a failure goes back through the plan, then the
// child exits with 127. Its dispositions are reset before it unblocks any
// signal, so no handler of the node ever runs on the child's stack.

/// The steps of the child, in order; the failing one is reported.
enum child_stage : int {
  stage_none = 0,
  stage_pgid,
  stage_deathsig,
  stage_orphaned,
  stage_stdio,
  stage_cwd,
  stage_cgroup,
  stage_exec,
  stage_setns,
  stage_clone_inner,
  stage_no_new_privs,
  stage_rlimit,
  stage_landlock,
  stage_seccomp,
};

/// What the child needs, prepared by the parent; `err` and `stage` are
/// written by a failing child and read by the parent after the clone
/// returned (CLONE_VFORK orders the two).
struct child_plan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;
  /// Become 0, 1 and 2; all above 2 (see `above_stdio`).
  int fd_in = -1;
  int fd_out = -1;
  int fd_err = -1;
  /// The `cgroup.procs` of the execution's cgroup on the `clone` path: the
  /// child moves itself there ("0") before the exec. -1 otherwise.
  int cgroup_procs = -1;
  /// The node's pid: a child whose parent is already gone gives up.
  pid_t parent = 0;
  /// A contained launch (see `enter_session`); -1 otherwise.
  int ns_pidfd = -1;
  int ruleset = -1;
  /// The command installs `filter` with a new listener and sends the
  /// listener over `report_socket` (`report_msg`, whose one descriptor
  /// slot is `report_slot`); null: no filter.
  const sock_fprog* filter = nullptr;
  int report_socket = -1;
  msghdr* report_msg = nullptr;
  int* report_slot = nullptr;
  /// cgroup v1 `cgroup.procs` the entering child joins; -1: unused.
  int join_cgroups[2] = {-1, -1};
  /// {resource, limit} applied by the command of a contained launch.
  long rlimits[3][2] = {{-1, 0}, {-1, 0}, {-1, 0}};
  /// The command itself was cloned into the session's PID namespace (the
  /// launching thread entered it for the clone): it joins the other
  /// namespaces itself, without an entering child.
  bool direct = false;
  /// The command's stack, its pid and pidfd (written by the entering child).
  char* inner_stack = nullptr;
  bool inner = false;
  long inner_pid = 0;
  int inner_pidfd = -1;
  int err = 0;
  int stage = stage_none;
};

SANDBOX_CHILD_FN int child_main(void* arg);
SANDBOX_CHILD_FN long contained_steps(child_plan* p, int& stage);
SANDBOX_CHILD_FN long join_session(child_plan* p, long ns_flags, int& stage);
SANDBOX_CHILD_FN int enter_session(child_plan* p);

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
                             | CLONE_NEWUTS | CLONE_NEWNET,
                           stage))
           < 0)
    goto fail;
  // Its own process group: the fallback mode's tracking and `kill` of a
  // spawned process reach the whole group.
  if ((r = child_sys(SYS_setpgid, 0, 0)) < 0) {
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

/// Step: flatten argv and env into the NULL-terminated arrays exec wants.
struct exec_arrays {
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
  explicit exec_arrays(const launch_spec& spec) {
    for (auto& arg : spec.argv)
      argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    env_strings.reserve(spec.env.size());
    for (auto& [k, v] : spec.env)
      env_strings.push_back(k + "=" + v);
    // Both sequences are in the order of their names: one merge, an entry
    // of `env` replacing the block's entry of the same name.
    static const std::vector<std::string> no_block;
    const auto& block = spec.env_block ? *spec.env_block : no_block;
    envp.reserve(block.size() + env_strings.size() + 1);
    auto own = spec.env.begin();
    size_t next = 0;
    auto push = [this](const std::string& kv) {
      envp.push_back(const_cast<char*>(kv.c_str()));
    };
    for (auto& kv : block) {
      std::string_view name{kv.data(), kv.find('=')};
      for (; own != spec.env.end() && own->first < name; ++own)
        push(env_strings[next++]);
      if (own != spec.env.end() && own->first == name) {
        push(env_strings[next++]);
        ++own;
        continue;
      }
      push(kv);
    }
    for (; next < env_strings.size(); ++next)
      push(env_strings[next]);
    envp.push_back(nullptr);
  }
};

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

/// The child's stack. The parent thread sleeps in clone until the child
/// execs or exits, so a buffer in the launching frame is free for it; the
/// child's steps need a few hundred bytes.
constexpr size_t child_stack_size = 32 * 1024;

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

// -- contained launches
// ---------------------------------------------------------

/// Joins the session's cgroup v1 limits (the command and all it starts
/// inherit them), then the namespaces `ns_flags` of its init at once.
SANDBOX_CHILD_FN long join_session(child_plan* p, long ns_flags, int& stage) {
  long r = 0;
  for (int fd : p->join_cgroups)
    if (fd >= 0
        && (r = child_sys(SYS_write, fd, reinterpret_cast<long>("0"), 1)) < 0) {
      stage = stage_cgroup;
      return r;
    }
  if ((r = child_sys(SYS_setns, p->ns_pidfd, ns_flags)) < 0) {
    stage = stage_setns;
    return r;
  }
  return 0;
}

/// The entering child of a node that may not enter the session's PID
/// namespace itself (see `enter_pid_namespace`), sharing the node's
/// descriptor table, which it never changes: joins every namespace of the
/// session's init at once, then
/// clones the command with CLONE_PARENT, so that the command is the node's
/// child (its pidfd lands in the shared table) and the first process of the
/// session's PID namespace that runs our steps. A new process is single
/// threaded and has its own fs_struct, which `setns` of a user and a mount
/// namespace requires; entering the PID namespace only places the children
/// made afterwards, hence the second clone.
SANDBOX_CHILD_FN int enter_session(child_plan* p) {
  int stage = stage_none;
  long r = join_session(p,
                        CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS
                          | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET,
                        stage);
  if (r < 0) {
    p->err = static_cast<int>(-r);
    p->stage = stage;
    child_sys(SYS_exit, 127);
  }
  clone_args_v2 args;
  args.flags = CLONE_VM | CLONE_VFORK | CLONE_PARENT | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uintptr_t>(&p->inner_pidfd);
  // CLONE_PARENT: the command's exit signal is ours (SIGCHLD).
  args.exit_signal = 0;
  args.stack = reinterpret_cast<uintptr_t>(p->inner_stack);
  args.stack_size = child_stack_size;
  p->inner = true;
  r = clone3_vm(args, child_main, p);
  if (r < 0) {
    p->err = static_cast<int>(-r);
    p->stage = stage_clone_inner;
    child_sys(SYS_exit, 127);
  }
  p->inner_pid = r;
  child_sys(SYS_exit, 0);
  return 0;
}

/// The command's own steps in a contained session, after its cwd: no new
/// privileges (no set-uid gain), the rlimits, then Landlock for good.
SANDBOX_CHILD_FN long contained_steps(child_plan* p, int& stage) {
  // prctl checks that its unused arguments are 0: all five are passed.
  long r = child_sys(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (r < 0) {
    stage = stage_no_new_privs;
    return r;
  }
  for (auto& lim : p->rlimits) {
    if (lim[0] < 0)
      continue;
    // RLIMIT_CPU: the soft limit sends SIGXCPU (the result names the
    // limit), the hard one a second later SIGKILL.
    uint64_t both[2]
      = {static_cast<uint64_t>(lim[1]),
         static_cast<uint64_t>(lim[1]) + (lim[0] == RLIMIT_CPU ? 1 : 0)};
    if ((r = child_sys(SYS_prlimit64, 0, lim[0], reinterpret_cast<long>(both),
                       0))
        < 0) {
      stage = stage_rlimit;
      return r;
    }
  }
  if (p->ruleset >= 0
      && (r = child_sys(SYS_landlock_restrict_self, p->ruleset, 0)) < 0) {
    stage = stage_landlock;
    return r;
  }
  // Last: from here on the watched calls wait for the node.
  if (p->filter != nullptr) {
    r = child_sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                  SECCOMP_FILTER_FLAG_NEW_LISTENER,
                  reinterpret_cast<long>(p->filter));
    if (r < 0) {
      stage = stage_seccomp;
      return r;
    }
    *p->report_slot = static_cast<int>(r);
    long sent = child_sys(SYS_sendmsg, p->report_socket,
                          reinterpret_cast<long>(p->report_msg), 0);
    child_sys(SYS_close, r);
    if (sent < 0) {
      stage = stage_seccomp;
      return sent;
    }
  }
  return 0;
}

/// Whether a launching thread may enter a session's PID namespace itself
/// (CAP_SYS_ADMIN in the node's user namespace): 0 not known yet, 1 yes,
/// -1 no (an unprivileged node: its entering child does it).
std::atomic<int> direct_entry{0};
std::atomic<bool> entering_child_forced{false};

/// Makes the calling thread's next children members of the PID namespace
/// of the init behind `ns_pidfd` (only this thread's, and only its
/// children's: it stays where it is). Returns a pidfd of the node, which
/// names the way back (`leave_pid_namespace`); none where the node may not,
/// or on any error (the entering child then meets and names it).
unique_fd enter_pid_namespace(int ns_pidfd) {
  if (direct_entry.load() < 0 || entering_child_forced.load())
    return {};
  unique_fd own{static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0))};
  if (!own)
    return {};
  if (::setns(ns_pidfd, CLONE_NEWPID) != 0) {
    if (errno == EPERM)
      direct_entry = -1;
    return {};
  }
  direct_entry = 1;
  return own;
}

/// Undoes `enter_pid_namespace`: back to the node's own PID namespace.
/// Always allowed (the namespace the thread is in); a thread that could not
/// return would start every later child in a session, so that ends the
/// node.
void leave_pid_namespace(const unique_fd& own) {
  if (::setns(own.get(), CLONE_NEWPID) != 0) {
    std::fprintf(stderr,
                 "sandbox: cannot return to the node's PID namespace: %s\n",
                 std::strerror(errno));
    std::abort();
  }
}

/// A contained launch: the entering child, born in `cgroup_fd` (-1: none),
/// shares our descriptor table. Returns the command's pid (or -errno);
/// the entering child is reaped here.
long clone3_contained(child_plan& plan, int cgroup_fd, char* stack) {
#if defined(__x86_64__)
  clone_args_v2 args;
  args.flags = CLONE_VM | CLONE_VFORK | CLONE_FILES
               | (cgroup_fd >= 0 ? clone_into_cgroup : 0);
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<uintptr_t>(stack);
  args.stack_size = child_stack_size;
  args.cgroup = cgroup_fd >= 0 ? static_cast<uint64_t>(cgroup_fd) : 0;
  long entering = clone3_vm(args, child_main, &plan);
  if (entering < 0)
    return entering;
  reap(static_cast<pid_t>(entering));
  return plan.inner_pid;
#else
  (void) plan, (void) cgroup_fd, (void) stack;
  return -ENOSYS;
#endif
}

/// The portable path: libc's clone (the child joins its cgroup itself).
long clone_child(child_plan& plan, int& pidfd, char* stack) {
  int rc = ::clone(child_main, stack + child_stack_size,
                   CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &plan,
                   reinterpret_cast<pid_t*>(&pidfd));
  return rc < 0 ? -errno : rc;
}

const char* contained_stage_name(int stage) {
  switch (stage) {
    case stage_setns:
      return "setns";
    case stage_clone_inner:
      return "clone into the PID namespace";
    case stage_no_new_privs:
      return "PR_SET_NO_NEW_PRIVS";
    case stage_rlimit:
      return "setrlimit";
    case stage_seccomp:
      return "seccomp listener";
    default:
      return "landlock_restrict_self";
  }
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
    case stage_setns:
    case stage_clone_inner:
    case stage_no_new_privs:
    case stage_rlimit:
    case stage_landlock:
    case stage_seccomp:
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

} // namespace

namespace {
result<launched_child> launch_contained(const launch_spec& spec,
                                        child_plan& plan, launched_child child,
                                        int cgroup_fd, char* stack,
                                        const exec_arrays& arrays);
} // namespace

result<launched_child> launch(const launch_spec& spec) {
  launched_child child;
  unique_fd stdin_r;
  unique_fd stdout_w;
  unique_fd stderr_w;
  if (spec.pipe_stdin) {
    if (auto ok = make_pipe(stdin_r, child.stdin_w); !ok)
      return ok.error();
  } else {
    stdin_r.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!stdin_r)
      return make_errno_error(errno, "/dev/null");
  }
  if (auto ok = make_pipe(child.stdout_r, stdout_w); !ok)
    return ok.error();
  if (auto ok = make_pipe(child.stderr_r, stderr_w); !ok)
    return ok.error();
  for (auto* fd : {&stdin_r, &stdout_w, &stderr_w})
    if (auto ok = above_stdio(*fd); !ok)
      return ok.error();
  unique_fd cgroup;
  if (!spec.cgroup.empty()) {
    cgroup.reset(
      ::open(spec.cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!cgroup)
      return error{errc::io_error,
                   fmt::format("cannot open cgroup {}: {}", spec.cgroup,
                               std::strerror(errno))};
  }
  exec_arrays arrays{spec};
  child_plan plan;
  plan.path = spec.executable.c_str();
  plan.argv = arrays.argv.data();
  plan.envp = arrays.envp.data();
  plan.cwd = spec.cwd.c_str();
  plan.fd_in = stdin_r.get();
  plan.fd_out = stdout_w.get();
  plan.fd_err = stderr_w.get();
  plan.parent = ::getpid();
  alignas(64) char stack[child_stack_size];
  int pidfd = -1;
  long pid = -ENOSYS;
  if (spec.contain.ns_pidfd >= 0)
    return launch_contained(spec, plan, std::move(child), cgroup.get(), stack,
                            arrays);
  if (!clone_forced.load() && !clone3_refused.load()) {
    all_signals_blocked blocked;
    pid = clone3_child(plan, cgroup.get(), pidfd, stack);
  }
  if (pid == -ENOSYS) {
#if defined(__x86_64__)
    if (!clone_forced.load())
      clone3_refused = true;
#endif
    unique_fd procs;
    if (cgroup) {
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
    if (cgroup)
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

namespace {

result<launched_child> launch_contained(const launch_spec& spec,
                                        child_plan& plan, launched_child child,
                                        int cgroup_fd, char* stack,
                                        const exec_arrays& arrays) {
  auto& c = spec.contain;
  plan.ns_pidfd = c.ns_pidfd;
  plan.ruleset = c.landlock_ruleset;
  plan.join_cgroups[0] = c.join_cgroups[0];
  plan.join_cgroups[1] = c.join_cgroups[1];
  // The command's seccomp listener comes back over a socket pair.
  unique_fd report_ours;
  unique_fd report_theirs;
  char byte = 0;
  fd_message out{&byte, 1};
  if (c.watch_filter != nullptr) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) != 0)
      return make_errno_error(errno, "cannot start a contained command: "
                                     "socketpair");
    report_ours.reset(pair[0]);
    report_theirs.reset(pair[1]);
    plan.filter = c.watch_filter;
    plan.report_socket = report_theirs.get();
    plan.report_slot = out.attach();
    plan.report_msg = &out.msg;
  }
  // The command's parent (the node) is outside its PID namespace: it sees
  // 0, and 1 once orphaned.
  plan.parent = 0;
  int i = 0;
  for (auto [res, value] : {std::pair{RLIMIT_CPU, c.cpu_seconds},
                            std::pair{RLIMIT_FSIZE, c.file_size},
                            std::pair{RLIMIT_NOFILE, c.open_files}})
    if (value > 0) {
      plan.rlimits[i][0] = res;
      plan.rlimits[i][1] = static_cast<long>(value);
      ++i;
    }
  long pid;
  if (auto own = enter_pid_namespace(c.ns_pidfd)) {
    // One clone: the command is born in the session's PID namespace.
    plan.inner = true;
    plan.direct = true;
    {
      all_signals_blocked blocked;
      pid = clone3_child(plan, cgroup_fd, plan.inner_pidfd, stack);
    }
    leave_pid_namespace(own);
  } else {
    alignas(64) char inner_stack[child_stack_size];
    plan.inner_stack = inner_stack;
    all_signals_blocked blocked;
    pid = clone3_contained(plan, cgroup_fd, stack);
  }
  if (pid < 0)
    return make_errno_error(static_cast<int>(-pid),
                            fmt::format("cannot start {}: clone",
                                        spec.executable));
  unique_fd pidfd_owner{plan.inner_pidfd};
  if (plan.stage != stage_none) {
    if (pid > 0)
      reap(static_cast<pid_t>(pid));
    return child_failure(plan, spec, arrays);
  }
  child.pid = static_cast<pid_t>(pid);
  child.pidfd = std::move(pidfd_owner);
  if (report_ours) {
    // Sent before the command's exec, which the clone waited for.
    fd_message in{&byte, 1};
    if (::recvmsg(report_ours.get(), &in.msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC)
        > 0)
      child.watch_listener.reset(in.received());
  }
  return child;
}

} // namespace

std::string_view launch_method() noexcept {
#if defined(__x86_64__)
  if (!clone_forced.load() && !clone3_refused.load())
    return "clone3";
#endif
  return "clone";
}

void force_entering_child(bool on) noexcept {
  entering_child_forced = on;
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
