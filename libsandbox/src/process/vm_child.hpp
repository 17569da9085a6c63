#pragma once

// The vfork-style child every launch of libsandbox makes (a command in
// launcher.cpp, a session's init in contain/session_init.cpp, the address maker
// in session_net.cpp): clone3 with CLONE_VM on a stack of the child's own, the
// child running a function of the caller's until its exec or exit, while
// the caller's thread sleeps (CLONE_VFORK) with every signal blocked. What
// runs in the child may only make raw system calls (child_syscall.hpp).

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "process/child_syscall.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

#if defined(__x86_64__)
// Defined in vm_child.cpp: clone3 on the stack `args` names, the child
// running fn(arg) and exiting with its value.
extern "C" long sandbox_clone3_vm(void* args, unsigned long size,
                                  int (*fn)(void*), void* arg);
#endif

namespace sandbox::detail {

/// Blocks every signal of the calling thread (libc's internal ones too,
/// hence the raw call) while it exists: a child shares the thread's memory
/// until its dispositions are reset, and a handler must not run there.
class all_signals_blocked {
public:
  all_signals_blocked() noexcept;
  ~all_signals_blocked();

  all_signals_blocked(const all_signals_blocked&) = delete;
  all_signals_blocked& operator=(const all_signals_blocked&) = delete;

private:
  uint64_t old_ = 0;
};

/// clone3 with `args` (CLONE_VM and a stack of the child's own, `args.stack`
/// and `args.stack_size`): the child runs `fn(arg)` on that stack and exits
/// with its value. Returns the child's pid, or -errno (-ENOSYS where there
/// is no trampoline: x86_64 only). Callable from such a child too.
__attribute__((always_inline)) inline long
clone3_vm(clone_args_v2& args, int (*fn)(void*), void* arg) {
#if defined(__x86_64__)
  return sandbox_clone3_vm(&args, sizeof(args), fn, arg);
#else
  (void) args, (void) fn, (void) arg;
  return -ENOSYS;
#endif
}

/// Waits until the child `pid` (any kind: __WALL) has exited and reaps it,
/// retrying on EINTR.
void reap(pid_t pid) noexcept;

/// The cgroup directory a clone3 child is born in (`CLONE_INTO_CGROUP`):
/// none for an empty path; an `io_error` naming the path when it cannot
/// be opened.
result<unique_fd> open_cgroup_dir(const std::string& path);

} // namespace sandbox::detail
