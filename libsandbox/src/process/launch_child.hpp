#pragma once

// The child of a launch (launcher.cpp) and what a contained launch
// (contain/enter.cpp) adds to it.

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "process/child_syscall.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/process/launcher.hpp"

struct sock_fprog;

namespace sandbox::detail {

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
  stage_identity,
  stage_terminal,
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
  /// 0, 1 and 2 are a terminal: the child leads a new session and makes
  /// it its controlling terminal.
  bool terminal = false;
  /// The node's pid: a child whose parent is already gone gives up.
  pid_t parent = 0;
  /// A contained launch (see `enter_session`); -1 otherwise.
  int ns_pidfd = -1;
  /// See `launch_containment::own_ids`.
  bool own_ids = false;
  /// contain/privilege_filter.hpp: installed before `filter`.
  const sock_fprog* privilege_filter = nullptr;
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

/// The child's stack. The parent thread sleeps in clone until the child
/// execs or exits, so a buffer in the launching frame is free for it; the
/// child's steps need a few hundred bytes.
constexpr size_t child_stack_size = 32 * 1024;

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

/// The child: its steps, then the exec (launcher.cpp).
SANDBOX_CHILD_FN int child_main(void* arg);

/// The steps of a contained command: rlimits, no new privileges, Landlock,
/// the seccomp filter (contain/enter.cpp).
SANDBOX_CHILD_FN long contained_steps(child_plan* p, int& stage);

/// Installs the watch filter `filter` with a new listener (contain/enter.cpp):
/// the listener, or -errno.
SANDBOX_CHILD_FN long install_watch(const sock_fprog* filter);

/// Joins the session's cgroup v1 limits, then the namespaces `ns_flags` of
/// its init at once (contain/enter.cpp).
SANDBOX_CHILD_FN long join_session(child_plan* p, long ns_flags, int& stage);

/// The entering child of a contained launch (contain/enter.cpp).
SANDBOX_CHILD_FN int enter_session(child_plan* p);

/// clone3 into `cgroup_fd` (-1: none); the pid, or -errno (-ENOSYS where
/// this path does not exist).
long clone3_child(child_plan& plan, int cgroup_fd, int& pidfd, char* stack);

/// The name of a contained launch's failed stage.
const char* contained_stage_name(int stage);

/// The error of a child that failed before or at its exec.
error child_failure(const child_plan& plan, const launch_spec& spec,
                    const exec_arrays& arrays);

/// `launch` of a contained command (contain/enter.cpp).
result<launched_child> launch_contained(const launch_spec& spec,
                                        child_plan& plan, launched_child child,
                                        int cgroup_fd, char* stack,
                                        const exec_arrays& arrays);

} // namespace sandbox::detail
