#pragma once

// What the seccomp program of contained commands (watch_filter in
// syscall_watch.hpp, built in seccomp_filter.cpp) watches, as the watcher
// needs to know it.

#include <fcntl.h>
#include <linux/seccomp.h>

#include <cstdint>

namespace sandbox::detail {

/// Open flags that make an open a write (or a create).
constexpr uint32_t write_flags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC;

/// A system call that names a process by its pid: its name and the
/// argument that holds the pid (the thread's for tgkill and
/// rt_tgsigqueueinfo).
struct pid_call {
  long nr;
  const char* name;
  int pid_arg;
};

/// The watched x86-64 call that names a process with number `nr`, or
/// nullptr.
const pid_call* pid_call_of(long nr);

/// What the node refuses outright (EPERM) in `d`, an x86-64 call, by name
/// (`io_uring_setup`, `ioctl TIOCSTI`, `ioctl TIOCLINUX`), or nullptr.
const char* refused_call_of(const seccomp_data& d);

/// A watched call of another ABI and the x86-64 call it is judged as.
struct foreign_call {
  /// AUDIT_ARCH_I386, or libseccomp's token for x32.
  uint32_t abi;
  int nr;
  /// -1 for `multiplexed`.
  long native;
  /// i386's `socketcall`: the call (`SYS_CONNECT`, `SYS_BIND`) in argument
  /// 0, its arguments in the caller's memory.
  bool multiplexed = false;
};

/// The watched call of another ABI (i386, x32: `__X32_SYSCALL_BIT` in the
/// number) that `d` is, or nullptr (an x86-64 call, or one not watched).
const foreign_call* foreign_call_of(const seccomp_data& d);

} // namespace sandbox::detail
