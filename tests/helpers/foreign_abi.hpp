#pragma once

// System calls of the other ABIs an x86-64 process can use (i386 through
// `int $0x80`, x32 through `syscall` with __X32_SYSCALL_BIT), made from
// 64-bit code: what a 32-bit or x32 program would do, for the tests of
// the seccomp filter (syscall_watch.hpp). Only system calls: usable in a
// forked child of a test that has other threads.

#include <asm/unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace sandbox::test {

/// i386 numbers (asm/unistd_32.h).
constexpr long i386_open = 5;
constexpr long i386_write = 4;
constexpr long i386_close = 6;
constexpr long i386_getpid = 20;
constexpr long i386_socketcall = 102;
/// socketcall's call number of sendto (linux/net.h SYS_SENDTO).
constexpr long i386_sys_sendto = 11;

/// x32 numbers (asm/unistd_x32.h): the x86-64 number with the bit.
constexpr long x32_openat = __X32_SYSCALL_BIT + 257;
constexpr long x32_connect = __X32_SYSCALL_BIT + 42;

/// An i386 system call: the result, or -errno. Pointers must lie below
/// 4 GiB (`low_copy`): the i386 ABI passes 32 bits.
inline long i386_syscall(long nr, long a = 0, long b = 0, long c = 0) {
  long ret = nr;
  // int $0x80 clobbers r8-r11 (zeroed on return since Linux 4.16).
  __asm__ volatile("int $0x80"
                   : "+a"(ret)
                   : "b"(a), "c"(b), "d"(c)
                   : "memory", "r8", "r9", "r10", "r11");
  return ret;
}

/// An x32 system call (`nr` with __X32_SYSCALL_BIT): the result, or
/// -errno (-ENOSYS where the kernel has no x32 ABI).
inline long x32_syscall(long nr, long a = 0, long b = 0, long c = 0,
                        long d = 0) {
  long ret = nr;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall"
                   : "+a"(ret)
                   : "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "memory", "rcx", "r11");
  return ret;
}

/// `len` bytes of `data` copied below 4 GiB (MAP_32BIT), where an i386 or
/// x32 system call can name them; never freed. Null when no such page
/// could be mapped.
inline void* low_copy(const void* data, size_t len) {
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
  if (p == MAP_FAILED)
    return nullptr;
  std::memcpy(p, data, len);
  return p;
}

/// `text` with its NUL copied below 4 GiB (see above).
inline char* low_copy(const char* text) {
  return static_cast<char*>(low_copy(text, std::strlen(text) + 1));
}

/// Whether this kernel runs i386 system calls (IA32 emulation, not
/// disabled with ia32_emulation=0): asked in a forked child, which a
/// kernel without them ends with SIGSEGV.
inline bool kernel_runs_i386() {
  pid_t pid = ::fork();
  if (pid == 0)
    ::_exit(i386_syscall(i386_getpid) == ::getpid() ? 0 : 1);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid)
    return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

} // namespace sandbox::test
