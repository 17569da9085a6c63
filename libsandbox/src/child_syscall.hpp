#pragma once

// System calls for code that runs in a child sharing the parent's memory
// (CLONE_VM) before its exec: no libc function (errno and libc's locks
// belong to the parent's thread) and no sanitizer hook.

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#if defined(__clang__)
#  if __has_attribute(disable_sanitizer_instrumentation)
#    define SANDBOX_CHILD_FN                                                   \
      __attribute__((disable_sanitizer_instrumentation, noinline))
#  else
#    define SANDBOX_CHILD_FN                                                   \
      __attribute__((no_sanitize("address", "thread", "undefined"), noinline))
#  endif
#else
#  define SANDBOX_CHILD_FN                                                     \
    __attribute__((no_sanitize_address, no_sanitize_thread,                    \
                   no_sanitize_undefined, noinline))
#endif

namespace sandbox::detail {

/// A system call that touches neither errno nor any other libc state;
/// returns the result or -errno.
#if defined(__x86_64__)
__attribute__((always_inline)) inline long
child_sys(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
  long ret;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
               : "rcx", "r11", "memory");
  return ret;
}
#else
__attribute__((always_inline)) inline long
child_sys(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0) {
  long ret = ::syscall(n, a, b, c, d, e);
  return ret == -1 ? -errno : ret;
}
#endif

/// The kernel's struct sigaction, all zero: SIG_DFL, no flags, empty mask.
struct kernel_sigaction {
  unsigned long handler = 0;
  unsigned long flags = 0;
  unsigned long restorer = 0;
  uint64_t mask = 0;
};

/// Default dispositions for every signal (glibc's internal 32 and 33
/// included: an ignore would survive the exec and reach every
/// descendant); SIGKILL and SIGSTOP cannot be changed.
__attribute__((always_inline)) inline void reset_signal_dispositions() {
  kernel_sigaction dfl;
  for (long sig = 1; sig <= 64; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      child_sys(SYS_rt_sigaction, sig, reinterpret_cast<long>(&dfl), 0, 8);
}

/// CLONE_INTO_CGROUP (Linux 5.7; not in every libc's headers).
constexpr uint64_t clone_into_cgroup = 0x200000000ULL;

/// The clone3 argument block, version 2 (with `cgroup`, Linux 5.7).
struct clone_args_v2 {
  uint64_t flags = 0;
  uint64_t pidfd = 0;
  uint64_t child_tid = 0;
  uint64_t parent_tid = 0;
  uint64_t exit_signal = 0;
  uint64_t stack = 0;
  uint64_t stack_size = 0;
  uint64_t tls = 0;
  uint64_t set_tid = 0;
  uint64_t set_tid_size = 0;
  uint64_t cgroup = 0;
};

} // namespace sandbox::detail
