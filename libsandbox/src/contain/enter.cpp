// A contained launch (launcher.hpp, `launch_spec::contain`): the command
// joins its session's namespaces and cgroups, then restricts itself
// (rlimits, no new privileges, Landlock, the seccomp watch) before its exec.
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "contain/privilege_filter.hpp"
#include "contain/session_launcher.hpp"
#include "io/fd_message.hpp"
#include "process/child_syscall.hpp"
#include "process/launch_child.hpp"
#include "process/vm_child.hpp"
#include "sandbox/process/launcher.hpp"

namespace sandbox {

namespace detail {

/// Joins the session's cgroup v1 limits (the command and all it starts
/// inherit them), then the namespaces `ns_flags` of its init at once. With
/// ids of its own (`own_ids`) the child is the session's root afterwards:
/// without the node's supplementary groups (dropped while the node's
/// privilege still counts: `setns` keeps them and the session may not
/// change them), then uid and gid 0 of the session, i.e. its own host ids
/// (`setns` keeps the node's uid, which the session does not map).
SANDBOX_CHILD_FN long join_session(child_plan* p, long ns_flags, int& stage) {
  long r = 0;
  for (int fd : p->join_cgroups)
    if (fd >= 0
        && (r = child_sys(SYS_write, fd, reinterpret_cast<long>("0"), 1)) < 0) {
      stage = stage_cgroup;
      return r;
    }
  if (p->own_ids && (r = child_sys(SYS_setgroups, 0, 0)) < 0) {
    stage = stage_identity;
    return r;
  }
  if ((r = child_sys(SYS_setns, p->ns_pidfd, ns_flags)) < 0) {
    stage = stage_setns;
    return r;
  }
  if (p->own_ids
      && ((r = child_sys(SYS_setresgid, 0, 0, 0)) < 0
          || (r = child_sys(SYS_setresuid, 0, 0, 0)) < 0)) {
    stage = stage_identity;
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
                          | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET
                          | CLONE_NEWCGROUP,
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

SANDBOX_CHILD_FN long install_watch(const sock_fprog* filter) {
  // Once the node has a call, the caller waits killably (Linux 5.19): a
  // signal that is not fatal (a child's SIGCHLD to a shell) no longer ends
  // the wait with EINTR, which calls such as `kill` never return
  // otherwise. Older kernels refuse the flag; they get the filter without
  // it.
  long r = child_sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                     SECCOMP_FILTER_FLAG_NEW_LISTENER
                       | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
                     reinterpret_cast<long>(filter));
  if (r == -EINVAL)
    r = child_sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                  SECCOMP_FILTER_FLAG_NEW_LISTENER,
                  reinterpret_cast<long>(filter));
  return r;
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
  // Neither file capabilities nor set-uid bits a create gave survive what
  // the command writes: both would be privileges of the node's uid on the
  // host (privilege_filter.hpp).
  for (long cap : {CAP_SETFCAP, CAP_FSETID})
    if ((r = child_sys(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0)) < 0) {
      stage = stage_identity;
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
  if (p->privilege_filter != nullptr
      && (r = child_sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
                        reinterpret_cast<long>(p->privilege_filter)))
           < 0) {
    stage = stage_seccomp;
    return r;
  }
  if (p->filter != nullptr) {
    if ((r = install_watch(p->filter)) < 0) {
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

/// The way back to the node's PID namespace (`leave_pid_namespace`): a
/// pidfd of the node, the session's or one of its own.
struct way_back {
  unique_fd owned;
  int fd = -1;
  explicit operator bool() const noexcept {
    return fd >= 0;
  }
};

/// Makes the calling thread's next children members of the PID namespace
/// of the init behind `ns_pidfd` (only this thread's, and only its
/// children's: it stays where it is). Returns the way back through
/// `node_pidfd` (a pidfd of the node; -1: one is opened); none where the
/// node may not, or on any error (the entering child then meets and names
/// it).
way_back enter_pid_namespace(int ns_pidfd, int node_pidfd) {
  if (direct_entry.load() < 0 || entering_child_forced.load())
    return {};
  way_back back;
  if (node_pidfd >= 0) {
    back.fd = node_pidfd;
  } else {
    back.owned.reset(
      static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
    if (!back.owned)
      return {};
    back.fd = back.owned.get();
  }
  if (::setns(ns_pidfd, CLONE_NEWPID) != 0) {
    if (errno == EPERM)
      direct_entry = -1;
    return {};
  }
  direct_entry = 1;
  return back;
}

/// Undoes `enter_pid_namespace`: back to the node's own PID namespace.
/// Always allowed (the namespace the thread is in); a thread that could not
/// return would start every later child in a session, so that ends the
/// node.
void leave_pid_namespace(const way_back& back) {
  if (::setns(back.fd, CLONE_NEWPID) != 0) {
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
    case stage_identity:
      return "becoming the session's own uid";
    default:
      return "landlock_restrict_self";
  }
}

/// The listener the command of launch `tag` sent over `ours` before its
/// exec, which the clone waited for; any other is one a failed launch left
/// there, closed. None: the command did not send it.
unique_fd take_listener(int ours, uint64_t tag) {
  for (;;) {
    uint64_t got = 0;
    fd_message in{&got, sizeof got};
    if (::recvmsg(ours, &in.msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) <= 0)
      return {};
    unique_fd listener{in.received()};
    if (got == tag)
      return listener;
  }
}

/// The command of `plan` made by the session's launcher, which it inherits
/// the watch filter from (so it installs none); -ESRCH, and `plan` as it
/// was, when the launcher is gone.
long by_launcher(session_launcher& launcher, child_plan& plan, int cgroup_fd,
                 char* stack) {
  auto* filter = plan.filter;
  plan.filter = nullptr;
  plan.inner = true;
  plan.direct = true;
  long pid = launcher.launch(plan, cgroup_fd, stack);
  if (pid != -ESRCH)
    return pid;
  plan.filter = filter;
  plan.inner = false;
  plan.direct = false;
  if (plan.inner_pidfd >= 0)
    ::close(plan.inner_pidfd);
  plan.inner_pidfd = -1;
  plan.err = 0;
  plan.stage = stage_none;
  return pid;
}

result<launched_child> launch_contained(const launch_spec& spec,
                                        child_plan& plan, launched_child child,
                                        int cgroup_fd, char* stack,
                                        const exec_arrays& arrays) {
  auto& c = spec.contain;
  plan.ns_pidfd = c.ns_pidfd;
  plan.own_ids = c.own_ids;
  // The watch refuses set-id modes and mount_setattr itself, and reports
  // them (an ERRNO program would win over its notifications and hide
  // them): the privilege program stands in only where there is no watch.
  if (c.watch_filter == nullptr
      && (plan.privilege_filter = privilege_filter()) == nullptr)
    return error{errc::unsupported,
                 fmt::format("cannot start {} in its contained session: the "
                             "seccomp program against set-uid bits cannot be "
                             "built (see the log)",
                             spec.executable)};
  plan.ruleset = c.landlock_ruleset;
  plan.join_cgroups[0] = c.join_cgroups[0];
  plan.join_cgroups[1] = c.join_cgroups[1];
  // The command's seccomp listener comes back over a socket pair, tagged
  // with this launch's number.
  unique_fd report_ours;
  unique_fd report_theirs;
  static std::atomic<uint64_t> launches{0};
  uint64_t tag = ++launches;
  fd_message out{&tag, sizeof tag};
  int report[2] = {c.report_pair[0], c.report_pair[1]};
  if (c.watch_filter != nullptr) {
    if (report[0] < 0 || report[1] < 0) {
      if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, report) != 0)
        return make_errno_error(errno, "cannot start a contained command: "
                                       "socketpair");
      report_ours.reset(report[0]);
      report_theirs.reset(report[1]);
    }
    plan.filter = c.watch_filter;
    plan.report_socket = report[1];
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
  long pid = c.launcher != nullptr
               ? by_launcher(*c.launcher, plan, cgroup_fd, stack)
               : -ESRCH;
  if (pid != -ESRCH) {
    // Made by the session's launcher (or failed there).
  } else if (auto back = enter_pid_namespace(c.ns_pidfd, c.node_pidfd)) {
    // One clone: the command is born in the session's PID namespace.
    plan.inner = true;
    plan.direct = true;
    {
      all_signals_blocked blocked;
      pid = clone3_child(plan, cgroup_fd, plan.inner_pidfd, stack);
    }
    leave_pid_namespace(back);
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
  // Taken at once, whether the launch failed or not: a listener left in a
  // session's pair would keep the failed command's filter until the next.
  unique_fd listener;
  if (plan.filter != nullptr)
    listener = take_listener(report[0], tag);
  if (plan.stage != stage_none) {
    if (pid > 0)
      reap(static_cast<pid_t>(pid));
    return child_failure(plan, spec, arrays);
  }
  child.pid = static_cast<pid_t>(pid);
  child.pidfd = std::move(pidfd_owner);
  child.watch_listener = std::move(listener);
  return child;
}

} // namespace detail

void force_entering_child(bool on) noexcept {
  detail::entering_child_forced = on;
}

} // namespace sandbox
