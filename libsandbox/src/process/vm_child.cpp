#include "process/vm_child.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#define SANDBOX_STR2(x) #x
#define SANDBOX_STR(x) SANDBOX_STR2(x)

#if defined(__x86_64__)
// long sandbox_clone3_vm(clone_args*, size_t, int (*fn)(void*), void* arg):
// clone3 with a stack of the child's own. The child returns from the
// system call on that stack, where no C++ frame exists to return to: it
// calls `fn(arg)` and exits with its value (as musl's __clone does for
// clone). fn and arg ride in r8 and r9, which the kernel copies into the
// child and the syscall instruction leaves alone.
asm(R"(
  .text
  .globl sandbox_clone3_vm
  .hidden sandbox_clone3_vm
  .type sandbox_clone3_vm, @function
sandbox_clone3_vm:
  .cfi_startproc
  mov %rdx, %r8
  mov %rcx, %r9
  mov $)" SANDBOX_STR(__NR_clone3) R"(, %eax
  syscall
  test %rax, %rax
  jz 1f
  ret
1:
  .cfi_undefined %rip
  xor %ebp, %ebp
  mov %r9, %rdi
  call *%r8
  mov %eax, %edi
  mov $)" SANDBOX_STR(__NR_exit) R"(, %eax
  syscall
  hlt
  .cfi_endproc
  .size sandbox_clone3_vm, .-sandbox_clone3_vm
)");
#endif

namespace sandbox::detail {

all_signals_blocked::all_signals_blocked() noexcept {
  uint64_t all = ~uint64_t{0};
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old_, 8);
}

all_signals_blocked::~all_signals_blocked() {
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old_, nullptr, 8);
}

void reap(pid_t pid) noexcept {
  siginfo_t info;
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | __WALL) < 0
         && errno == EINTR)
    ;
}

result<unique_fd> open_cgroup_dir(const std::string& path) {
  unique_fd fd;
  if (path.empty())
    return fd;
  fd.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd)
    return error{errc::io_error, fmt::format("cannot open cgroup {}: {}", path,
                                             std::strerror(errno))};
  return fd;
}

} // namespace sandbox::detail
