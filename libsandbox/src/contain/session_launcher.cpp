#include "contain/session_launcher.hpp"

#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "process/child_syscall.hpp"
#include "process/launch_child.hpp"
#include "process/vm_child.hpp"
#include "sandbox/log.hpp"

namespace sandbox::detail {

// contain/enter.cpp: a test's `force_entering_child`, and whether the node
// may enter a session's PID namespace itself (-1: it may not).
extern std::atomic<bool> entering_child_forced;
extern std::atomic<int> direct_entry;

namespace {

/// What the launcher's futex word says.
enum launcher_state : uint32_t {
  /// Starting, or waiting for a request.
  idle = 0,
  /// `plan` waits to be launched.
  requested = 1,
  /// The start or the request is done (`result`).
  done = 2,
  /// The launcher is asked to exit.
  quit = 3,
};

/// The launcher's own stack (its steps and the clone need a few hundred
/// bytes; the commands have stacks of their own).
constexpr size_t launcher_stack_size = 16 * 1024;

} // namespace

/// What the node and its launcher share: the start of the launcher's
/// mapping, its stack at the end.
struct session_launcher::shared {
  uint32_t state = idle;
  int ns_pidfd = -1;
  const sock_fprog* filter = nullptr;
  pid_t parent = 0;
  /// The request.
  child_plan* plan = nullptr;
  int cgroup_fd = -1;
  char* stack = nullptr;
  /// The start's listener (or -errno), then each request's pid (or -errno).
  long result = 0;
  int stage = stage_none;
};

namespace {

using shared = session_launcher::shared;

SANDBOX_CHILD_FN uint32_t load(const uint32_t* word) {
  return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

SANDBOX_CHILD_FN void publish(shared* s, uint32_t state) {
  __atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
  child_sys(SYS_futex, reinterpret_cast<long>(&s->state), FUTEX_WAKE_PRIVATE,
            1);
}

SANDBOX_CHILD_FN void fail(shared* s, long r, int stage) {
  s->result = r;
  s->stage = stage;
  publish(s, done);
  child_sys(SYS_exit, 127);
}

/// The launcher: its set-up, then one command per request, for ever.
SANDBOX_CHILD_FN int launcher_main(void* arg) {
  auto* s = static_cast<shared*>(arg);
  long r = child_sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (r < 0 || child_sys(SYS_getppid) != s->parent)
    fail(s, r < 0 ? r : -ESRCH, stage_orphaned);
  if ((r = child_sys(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) < 0)
    fail(s, r, stage_no_new_privs);
  // Its children are born in the session's PID namespace; it stays where
  // it is.
  if ((r = child_sys(SYS_setns, s->ns_pidfd, CLONE_NEWPID)) < 0)
    fail(s, r, stage_setns);
  if ((r = install_watch(s->filter)) < 0)
    fail(s, r, stage_seccomp);
  s->result = r;
  publish(s, done);
  for (;;) {
    uint32_t now = load(&s->state);
    if (now == quit)
      child_sys(SYS_exit, 0);
    if (now != requested) {
      child_sys(SYS_futex, reinterpret_cast<long>(&s->state),
                FUTEX_WAIT_PRIVATE, now, 0);
      continue;
    }
    auto* plan = s->plan;
    clone_args_v2 args;
    // CLONE_PARENT: the command is the node's child, and its exit signal
    // is the launcher's (SIGCHLD).
    args.flags = CLONE_VM | CLONE_VFORK | CLONE_PARENT | CLONE_PIDFD
                 | (s->cgroup_fd >= 0 ? clone_into_cgroup : 0);
    args.pidfd = reinterpret_cast<uintptr_t>(&plan->inner_pidfd);
    args.stack = reinterpret_cast<uintptr_t>(s->stack);
    args.stack_size = child_stack_size;
    args.cgroup = s->cgroup_fd >= 0 ? static_cast<uint64_t>(s->cgroup_fd) : 0;
    s->result = clone3_vm(args, child_main, plan);
    publish(s, done);
  }
}

/// Waits until `s` is no longer `from`; false when the launcher behind
/// `pidfd` has ended meanwhile.
bool wait_while(shared* s, uint32_t from, int pidfd) {
  for (;;) {
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != from)
      return true;
    timespec slice{0, 100 * 1000 * 1000};
    ::syscall(SYS_futex, &s->state, FUTEX_WAIT_PRIVATE, from, &slice);
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != from)
      return true;
    pollfd ended{pidfd, POLLIN, 0};
    if (::poll(&ended, 1, 0) == 1)
      return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != from;
  }
}

} // namespace

result<std::unique_ptr<session_launcher>>
session_launcher::start(int ns_pidfd, const sock_fprog* filter) {
  if (filter == nullptr)
    return error{errc::unsupported, "no seccomp watch"};
  if (entering_child_forced.load() || direct_entry.load() < 0)
    return error{errc::unsupported, "the node may not enter the session's "
                                    "PID namespace"};
  std::unique_ptr<session_launcher> out{new session_launcher};
  size_t size = sizeof(shared) + launcher_stack_size;
  void* map = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    return make_errno_error(errno, "session launcher: mmap");
  out->shared_ = new (map) shared;
  auto* s = out->shared_;
  s->ns_pidfd = ns_pidfd;
  s->filter = filter;
  s->parent = ::getpid();
  int pidfd = -1;
  clone_args_v2 args;
  args.flags = CLONE_VM | CLONE_FILES | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uintptr_t>(&pidfd);
  // The commands' exit signal (CLONE_PARENT takes the launcher's).
  args.exit_signal = SIGCHLD;
  args.stack
    = reinterpret_cast<uintptr_t>(static_cast<char*>(map) + sizeof(shared));
  args.stack_size = launcher_stack_size;
  long pid;
  {
    // It never unblocks a signal: no handler of the node runs there.
    all_signals_blocked blocked;
    pid = clone3_vm(args, launcher_main, s);
  }
  if (pid < 0) {
    ::munmap(map, size);
    out->shared_ = nullptr;
    return make_errno_error(static_cast<int>(-pid), "session launcher: clone3");
  }
  out->pidfd_.reset(pidfd);
  out->pid_ = static_cast<pid_t>(pid);
  if (!wait_while(s, idle, pidfd) || s->result < 0) {
    auto err = s->state == done ? static_cast<int>(-s->result) : ESRCH;
    auto stage = s->stage;
    out->gone_ = true;
    return error{errc::unsupported, fmt::format("session launcher: {}: {}",
                                                stage == stage_orphaned
                                                  ? "PR_SET_PDEATHSIG"
                                                  : contained_stage_name(stage),
                                                std::strerror(err))};
  }
  return out;
}

session_launcher::~session_launcher() {
  if (shared_ == nullptr)
    return;
  if (pidfd_) {
    publish(shared_, quit);
    siginfo_t info;
    while (::waitid(static_cast<idtype_t>(P_PIDFD),
                    static_cast<id_t>(pidfd_.get()), &info, WEXITED | __WALL)
             < 0
           && errno == EINTR)
      ;
  }
  ::munmap(shared_, sizeof(shared) + launcher_stack_size);
}

unique_fd session_launcher::take_listener() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (gone_ || shared_->result < 0)
    return {};
  unique_fd out{static_cast<int>(shared_->result)};
  shared_->result = -EBADF;
  return out;
}

long session_launcher::launch(child_plan& plan, int cgroup_fd, char* stack) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (gone_)
    return -ESRCH;
  auto* s = shared_;
  s->plan = &plan;
  s->cgroup_fd = cgroup_fd;
  s->stack = stack;
  publish(s, requested);
  if (!wait_while(s, requested, pidfd_.get())) {
    gone_ = true;
    log::logger()->warn("the launcher of a contained session (pid {}) has "
                        "ended: its commands install their own filters",
                        pid_);
    // A command it made before it ended may still run on `stack` until
    // its exec: the end of the launcher is the end of its thread, which
    // the session's init and every command follow (PR_SET_PDEATHSIG).
    if (plan.inner_pidfd >= 0) {
      pollfd ended{plan.inner_pidfd, POLLIN, 0};
      ::poll(&ended, 1, 1000);
    }
    return -ESRCH;
  }
  return s->result;
}

pid_t session_launcher::pid() const noexcept {
  return pid_;
}

} // namespace sandbox::detail
