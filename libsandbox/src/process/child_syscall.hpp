#pragma once

// System calls for code that runs in a child sharing the parent's memory
// (CLONE_VM) before its exec: no libc function (errno and libc's locks
// belong to the parent's thread) and no sanitizer hook.

#include <fcntl.h>
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

/// The mask after `key` (e.g. "SigIgn:\t") in /proc/<pid>/status text
/// `text[0, n)`: 16 hex digits, bit `sig - 1` for signal `sig`. False when
/// the line is missing or malformed.
__attribute__((always_inline)) inline bool
status_mask(const char* text, long n, const char* key, uint64_t& out) {
  long key_len = 0;
  while (key[key_len] != '\0')
    ++key_len;
  for (long at = 0; at + key_len + 16 <= n; ++at) {
    if (at > 0 && text[at - 1] != '\n')
      continue;
    long i = 0;
    while (i < key_len && text[at + i] == key[i])
      ++i;
    if (i < key_len)
      continue;
    uint64_t mask = 0;
    for (long d = at + key_len; d < at + key_len + 16; ++d) {
      char c = text[d];
      uint64_t v = c >= '0' && c <= '9'   ? static_cast<uint64_t>(c - '0')
                   : c >= 'a' && c <= 'f' ? static_cast<uint64_t>(c - 'a' + 10)
                                          : 16;
      if (v == 16)
        return false;
      mask = (mask << 4) | v;
    }
    out = mask;
    return true;
  }
  return false;
}

/// The signals whose disposition is not the default in the calling
/// process: SigIgn | SigCgt of its own /proc/self/status (a child that is
/// not a thread has its own copy of the dispositions, which no other
/// thread can change). False when /proc cannot tell (not mounted, not
/// readable in a contained child): then every signal is reset.
__attribute__((always_inline)) inline bool non_default_signals(uint64_t& out) {
  long fd = child_sys(SYS_openat, AT_FDCWD,
                      reinterpret_cast<long>("/proc/self/status"),
                      O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  // The Sig* lines come within the first kilobyte; one read of a seq file
  // returns as much of it as fits.
  char text[4096];
  long n = child_sys(SYS_read, fd, reinterpret_cast<long>(text), sizeof text);
  child_sys(SYS_close, fd);
  uint64_t ignored = 0;
  uint64_t caught = 0;
  if (n <= 0 || !status_mask(text, n, "SigIgn:\t", ignored)
      || !status_mask(text, n, "SigCgt:\t", caught))
    return false;
  out = ignored | caught;
  return true;
}

/// Default dispositions for every signal (glibc's internal 32 and 33
/// included: an ignore would survive the exec and reach every
/// descendant); SIGKILL and SIGSTOP cannot be changed. Only the signals
/// /proc names as ignored or caught are reset (a process has a few; the
/// 62 calls of resetting them all cost about 60 µs of the launch).
__attribute__((always_inline)) inline void reset_signal_dispositions() {
  kernel_sigaction dfl;
  uint64_t changed = ~uint64_t{0};
  if (!non_default_signals(changed))
    changed = ~uint64_t{0};
  for (long sig = 1; sig <= 64; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP
        && (changed & (uint64_t{1} << (sig - 1))) != 0)
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
