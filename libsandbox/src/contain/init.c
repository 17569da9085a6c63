// PID 1 of a contained session (session_init.cpp, "the init program"). Built
// by CMake as a static program without libc (-nostdlib -ffreestanding) and
// embedded in libsandbox as bytes (embed_init.cmake); the node writes it
// into a sealed memfd and executes it from there, so it shares nothing
// with the node: no copy of its memory, nothing of its address space a
// command could reach through ptrace.
//
// With SIGCHLD blocked (set by the node before the exec) it reaps every
// zombie, then sleeps until one more child ends, for ever. A blocked
// SIGCHLD stays pending even though its default action is to be ignored,
// so a child that ends between the wait4 and the sigtimedwait is not
// missed. As PID 1 it ignores every signal sent from inside its namespace;
// SIGKILL from the node ends it, and the kernel then kills every process
// of the namespace.

#include <asm/signal.h>
#include <asm/unistd.h>
#include <linux/wait.h>

#if !defined(__x86_64__)
#  error "the session init has system calls for x86_64 only"
#endif

static long sys4(long nr, long a, long b, long c, long d) {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return ret;
}

// The entry point: no return address, no arguments read.
__attribute__((noreturn, force_align_arg_pointer)) void _start(void) {
  unsigned long chld = 1UL << (SIGCHLD - 1);
  for (;;) {
    while (sys4(__NR_wait4, -1, 0, WNOHANG | __WALL, 0) > 0)
      ;
    sys4(__NR_rt_sigtimedwait, (long) &chld, 0, 0, sizeof(chld));
  }
}
