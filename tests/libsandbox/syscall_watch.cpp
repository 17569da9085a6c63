#define CAF_SUITE libsandbox.syscall_watch
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The seccomp program of contained commands (syscall_watch.hpp), run here
// by a small interpreter of the instructions it uses, for every system
// call number: exactly the watched calls notify, an open only when its
// flags write, and any call runs only a few instructions.

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>

#include <cstddef>
#include <cstring>
#include <set>

#include "sandbox/syscall_watch.hpp"

namespace {

struct outcome {
  uint32_t action = 0;
  size_t steps = 0;
};

/// Runs `prog` on `data` (loads, JEQ/JGE/JSET/JA, RET only; anything else
/// fails the test).
outcome run(const sock_fprog& prog, const seccomp_data& data) {
  outcome out;
  uint32_t acc = 0;
  for (size_t pc = 0; pc < prog.len; ++pc) {
    ++out.steps;
    auto& in = prog.filter[pc];
    switch (in.code) {
      case BPF_LD | BPF_W | BPF_ABS:
        std::memcpy(&acc, reinterpret_cast<const char*>(&data) + in.k, 4);
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        pc += acc == in.k ? in.jt : in.jf;
        break;
      case BPF_JMP | BPF_JGE | BPF_K:
        pc += acc >= in.k ? in.jt : in.jf;
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
        pc += (acc & in.k) != 0 ? in.jt : in.jf;
        break;
      case BPF_JMP | BPF_JA:
        pc += in.k;
        break;
      case BPF_RET | BPF_K:
        out.action = in.k;
        return out;
      default:
        CAF_FAIL("unexpected instruction " << in.code << " at " << pc);
    }
  }
  CAF_FAIL("the program ran off its end");
  return out;
}

seccomp_data call(long nr, uint64_t arg1 = 0, uint64_t arg2 = 0) {
  seccomp_data d{};
  d.arch = AUDIT_ARCH_X86_64;
  d.nr = static_cast<int>(nr);
  d.args[1] = arg1;
  d.args[2] = arg2;
  return d;
}

} // namespace

CAF_TEST(exactly the watched calls notify) {
  auto& prog = *sandbox::watch_filter();
  const std::set<long> watched = {
    SYS_connect, SYS_creat, SYS_mkdir, SYS_mkdirat, SYS_unlink, SYS_unlinkat,
    SYS_rmdir, SYS_rename, SYS_renameat, SYS_renameat2, SYS_link, SYS_linkat,
    SYS_symlink, SYS_symlinkat, SYS_mknod, SYS_mknodat, SYS_truncate,
    SYS_openat2,
    // They name a process by its pid (ptrace below: only to attach).
    SYS_kill, SYS_tkill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo,
    SYS_pidfd_open, SYS_process_vm_readv, SYS_process_vm_writev};
  size_t most = 0;
  for (long nr = 0; nr < 1024; ++nr) {
    auto r = run(prog, call(nr));
    most = std::max(most, r.steps);
    auto expected = watched.count(nr) != 0 ? SECCOMP_RET_USER_NOTIF
                                           : SECCOMP_RET_ALLOW;
    if (r.action != expected)
      CAF_FAIL("system call " << nr << ": action " << r.action);
  }
  // A search, not a list: a handful of steps for any call.
  CAF_CHECK_LESS_OR_EQUAL(most, 14u);
  CAF_MESSAGE("at most " << most << " instructions per call");
}

CAF_TEST(an open notifies only when it writes) {
  auto& prog = *sandbox::watch_filter();
  CAF_CHECK_EQUAL(run(prog, call(SYS_open, O_RDONLY)).action,
                  SECCOMP_RET_ALLOW);
  CAF_CHECK_EQUAL(run(prog, call(SYS_openat, 0, O_RDONLY | O_CLOEXEC)).action,
                  SECCOMP_RET_ALLOW);
  for (uint64_t flags : {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC}) {
    CAF_CHECK_EQUAL(run(prog, call(SYS_open, flags)).action,
                    SECCOMP_RET_USER_NOTIF);
    CAF_CHECK_EQUAL(run(prog, call(SYS_openat, 0, flags)).action,
                    SECCOMP_RET_USER_NOTIF);
  }
}

CAF_TEST(a ptrace notifies only when it attaches) {
  auto& prog = *sandbox::watch_filter();
  auto request = [](long r) {
    auto d = call(SYS_ptrace);
    d.args[0] = static_cast<uint64_t>(r);
    return d;
  };
  for (long r : {PTRACE_ATTACH, PTRACE_SEIZE})
    CAF_CHECK_EQUAL(run(prog, request(r)).action, SECCOMP_RET_USER_NOTIF);
  // A debugger's traffic with a tracee it holds already runs unwatched.
  for (long r : {PTRACE_TRACEME, PTRACE_PEEKDATA, PTRACE_CONT, PTRACE_GETREGS,
                 PTRACE_DETACH})
    CAF_CHECK_EQUAL(run(prog, request(r)).action, SECCOMP_RET_ALLOW);
}

CAF_TEST(other architectures pass unwatched) {
  auto d = call(SYS_connect);
  d.arch = AUDIT_ARCH_I386;
  CAF_CHECK_EQUAL(run(*sandbox::watch_filter(), d).action, SECCOMP_RET_ALLOW);
}
