#pragma once

// System calls for code that runs in a child sharing the parent's memory
// (CLONE_VM) before its exec: no libc function (errno and libc's locks
// belong to the parent's thread) and no sanitizer hook.

#include <unistd.h>

#include <cerrno>

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

} // namespace sandbox::detail
