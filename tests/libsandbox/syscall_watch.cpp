#define CAF_SUITE libsandbox.syscall_watch
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The seccomp program of contained commands (syscall_watch.hpp), run here
// by a small interpreter of the instructions it uses, for every system
// call number of every ABI of an x86-64 process: exactly the watched calls
// notify, an open only when its flags write, and any call runs only a few
// instructions. Then the kernel runs it: a forked child under the filter
// makes calls of the other ABIs, and the watcher reports them as it
// reports their x86-64 twins; it types into its terminal and sets up an
// io_uring, both refused with EPERM and reported, and binds unix sockets,
// the one outside reported as a write.

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/net.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>

#include <cstddef>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#include "contain/syscall_judge.hpp"
#include "helpers/foreign_abi.hpp"
#include "helpers/temp_dir.hpp"
#include "helpers/watched_child.hpp"
#include "io/fd_message.hpp"
#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/io/reactor.hpp"

namespace {

struct outcome {
  uint32_t action = 0;
  size_t steps = 0;
};

/// Runs `prog` on `data` (loads, AND, JEQ/JGT/JGE/JSET/JA, RET only;
/// anything else fails the test).
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
      case BPF_ALU | BPF_AND | BPF_K:
        acc &= in.k;
        break;
      case BPF_JMP | BPF_JEQ | BPF_K:
        pc += acc == in.k ? in.jt : in.jf;
        break;
      case BPF_JMP | BPF_JGT | BPF_K:
        pc += acc > in.k ? in.jt : in.jf;
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

seccomp_data call(long nr, uint64_t arg1 = 0, uint64_t arg2 = 0,
                  uint32_t arch = AUDIT_ARCH_X86_64) {
  seccomp_data d{};
  d.arch = arch;
  d.nr = static_cast<int>(nr);
  d.args[1] = arg1;
  d.args[2] = arg2;
  return d;
}

seccomp_data i386(long nr, uint64_t arg1 = 0, uint64_t arg2 = 0) {
  return call(nr, arg1, arg2, AUDIT_ARCH_I386);
}

seccomp_data x32(long nr, uint64_t arg1 = 0, uint64_t arg2 = 0) {
  return call(nr | __X32_SYSCALL_BIT, arg1, arg2);
}

uint32_t action(const seccomp_data& d) {
  return run(*sandbox::watch_filter(), d).action;
}

/// The x86-64 calls that notify whatever their arguments, by number
/// (asm/unistd_64.h).
const std::set<long> x86_64_watched = {
  SYS_connect, SYS_creat, SYS_mkdir, SYS_mkdirat, SYS_unlink, SYS_unlinkat,
  SYS_rmdir, SYS_rename, SYS_renameat, SYS_renameat2, SYS_link, SYS_linkat,
  SYS_symlink, SYS_symlinkat, SYS_mknod, SYS_mknodat, SYS_truncate, SYS_openat2,
  SYS_bind,
  // They change a file's metadata (fchmodat2 is 452).
  SYS_chmod, SYS_fchmod, SYS_fchmodat, 452, SYS_chown, SYS_fchown, SYS_lchown,
  SYS_fchownat, SYS_utimensat, SYS_utimes, SYS_futimesat, SYS_utime,
  SYS_setxattr, SYS_lsetxattr, SYS_fsetxattr, SYS_removexattr, SYS_lremovexattr,
  SYS_fremovexattr,
  // Refused by the node.
  SYS_io_uring_setup, SYS_mount_setattr,
  // They name a process by its pid (ptrace below: only to attach).
  SYS_kill, SYS_tkill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo,
  SYS_pidfd_open, SYS_process_vm_readv, SYS_process_vm_writev};

/// The same calls of i386 (asm/unistd_32.h), with truncate64 and the
/// direct connect and bind; socketcall, open, openat, ptrace and ioctl
/// notify only for some arguments.
const std::set<long> i386_watched = {362 /* connect */,
                                     8 /* creat */,
                                     39 /* mkdir */,
                                     296 /* mkdirat */,
                                     10 /* unlink */,
                                     301 /* unlinkat */,
                                     40 /* rmdir */,
                                     38 /* rename */,
                                     302 /* renameat */,
                                     353 /* renameat2 */,
                                     9 /* link */,
                                     303 /* linkat */,
                                     83 /* symlink */,
                                     304 /* symlinkat */,
                                     14 /* mknod */,
                                     297 /* mknodat */,
                                     92 /* truncate */,
                                     193 /* truncate64 */,
                                     437 /* openat2 */,
                                     361 /* bind */,
                                     15 /* chmod */,
                                     94 /* fchmod */,
                                     306 /* fchmodat */,
                                     452 /* fchmodat2 */,
                                     182 /* chown */,
                                     95 /* fchown */,
                                     16 /* lchown */,
                                     298 /* fchownat */,
                                     212 /* chown32 */,
                                     207 /* fchown32 */,
                                     198 /* lchown32 */,
                                     320 /* utimensat */,
                                     412 /* utimensat_time64 */,
                                     271 /* utimes */,
                                     299 /* futimesat */,
                                     30 /* utime */,
                                     226 /* setxattr */,
                                     227 /* lsetxattr */,
                                     228 /* fsetxattr */,
                                     235 /* removexattr */,
                                     236 /* lremovexattr */,
                                     237 /* fremovexattr */,
                                     425 /* io_uring_setup */,
                                     442 /* mount_setattr */,
                                     37 /* kill */,
                                     238 /* tkill */,
                                     270 /* tgkill */,
                                     178 /* rt_sigqueueinfo */,
                                     335 /* rt_tgsigqueueinfo */,
                                     434 /* pidfd_open */,
                                     347 /* process_vm_readv */,
                                     348 /* process_vm_writev */};

/// The same calls of x32 (asm/unistd_x32.h, without the bit): the x86-64
/// numbers but for those with a compat entry point of their own.
std::set<long> x32_watched() {
  auto out = x86_64_watched;
  for (auto nr : {SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo,
                  SYS_process_vm_readv, SYS_process_vm_writev})
    out.erase(nr);
  for (long nr : {524L, 536L, 539L, 540L})
    out.insert(nr);
  return out;
}

/// Runs every number below 1024 of one ABI through the program; fails on
/// any number whose action is not the expected one and returns the most
/// instructions one call ran.
template <class Make>
size_t check_every_number(const std::set<long>& watched, Make make) {
  size_t most = 0;
  for (long nr = 0; nr < 1024; ++nr) {
    auto r = run(*sandbox::watch_filter(), make(nr));
    most = std::max(most, r.steps);
    auto expected = watched.count(nr) != 0 ? SECCOMP_RET_USER_NOTIF
                                           : SECCOMP_RET_ALLOW;
    if (r.action != expected)
      CAF_FAIL("system call " << nr << ": action " << r.action);
  }
  return most;
}

} // namespace

CAF_TEST(exactly the watched calls notify in every ABI) {
  auto most = check_every_number(x86_64_watched,
                                 [](long nr) { return call(nr); });
  auto most_i386 = check_every_number(i386_watched,
                                      [](long nr) { return i386(nr); });
  auto most_x32 = check_every_number(x32_watched(),
                                     [](long nr) { return x32(nr); });
  // A search, not a list: a few dozen steps for any call (libseccomp's
  // binary tree, 25 at most in 2.5.4), not one per watched call.
  CAF_MESSAGE("at most " << most << " (x86-64), " << most_i386 << " (i386), "
                         << most_x32 << " (x32) instructions per call");
  for (auto m : {most, most_i386, most_x32})
    CAF_CHECK_LESS_OR_EQUAL(m, 32u);
}

CAF_TEST(an open notifies only when it writes) {
  CAF_CHECK_EQUAL(action(call(SYS_open, O_RDONLY)), SECCOMP_RET_ALLOW);
  CAF_CHECK_EQUAL(action(call(SYS_openat, 0, O_RDONLY | O_CLOEXEC)),
                  SECCOMP_RET_ALLOW);
  CAF_CHECK_EQUAL(action(i386(5 /* open */, O_RDONLY)), SECCOMP_RET_ALLOW);
  CAF_CHECK_EQUAL(action(i386(295 /* openat */, 0, O_RDONLY)),
                  SECCOMP_RET_ALLOW);
  CAF_CHECK_EQUAL(action(x32(SYS_openat, 0, O_RDONLY)), SECCOMP_RET_ALLOW);
  for (uint64_t flags : {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC}) {
    CAF_CHECK_EQUAL(action(call(SYS_open, flags)), SECCOMP_RET_USER_NOTIF);
    CAF_CHECK_EQUAL(action(call(SYS_openat, 0, flags)), SECCOMP_RET_USER_NOTIF);
    CAF_CHECK_EQUAL(action(i386(5 /* open */, flags)), SECCOMP_RET_USER_NOTIF);
    CAF_CHECK_EQUAL(action(i386(295 /* openat */, 0, flags)),
                    SECCOMP_RET_USER_NOTIF);
    CAF_CHECK_EQUAL(action(x32(SYS_open, flags)), SECCOMP_RET_USER_NOTIF);
    CAF_CHECK_EQUAL(action(x32(SYS_openat, 0, flags)), SECCOMP_RET_USER_NOTIF);
  }
}

CAF_TEST(a ptrace notifies only when it attaches) {
  auto request = [](long r, seccomp_data d) {
    d.args[0] = static_cast<uint64_t>(r);
    return d;
  };
  for (auto d : {call(SYS_ptrace), i386(26), x32(521)}) {
    for (long r : {PTRACE_ATTACH, PTRACE_SEIZE})
      CAF_CHECK_EQUAL(action(request(r, d)), SECCOMP_RET_USER_NOTIF);
    // A debugger's traffic with a tracee it holds already runs unwatched.
    for (long r : {PTRACE_TRACEME, PTRACE_PEEKDATA, PTRACE_CONT, PTRACE_GETREGS,
                   PTRACE_DETACH})
      CAF_CHECK_EQUAL(action(request(r, d)), SECCOMP_RET_ALLOW);
  }
}

CAF_TEST(an i386 socketcall notifies only when it connects binds or sends to) {
  auto socketcall = [](uint64_t which) {
    auto d = i386(102);
    d.args[0] = which;
    return d;
  };
  for (uint64_t which : {SYS_CONNECT, SYS_BIND, SYS_SENDTO})
    CAF_CHECK_EQUAL(action(socketcall(which)), SECCOMP_RET_USER_NOTIF);
  for (uint64_t which : {SYS_SOCKET, SYS_LISTEN, SYS_SEND, SYS_RECVMSG})
    CAF_CHECK_EQUAL(action(socketcall(which)), SECCOMP_RET_ALLOW);
}

CAF_TEST(an i386 socketcall sendto is judged as the x86 - 64 sendto) {
  // The judge reads socketcall's six words from the caller's memory (here
  // the test's own, below 4 GiB as an i386 caller's is).
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  std::strcpy(to.sun_path, "/run/x.sock");
  auto* addr = sandbox::test::low_copy(&to, sizeof(to));
  CAF_REQUIRE(addr != nullptr);
  auto low = [](const void* p) {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p));
  };
  uint32_t words[6] = {5, 0x1000, 1, 0, low(addr), sizeof(to)};
  auto* args = sandbox::test::low_copy(words, sizeof(words));
  CAF_REQUIRE(args != nullptr);
  seccomp_notif n{};
  n.pid = static_cast<uint32_t>(::getpid());
  n.data = i386(102);
  n.data.args[0] = SYS_SENDTO;
  n.data.args[1] = low(args);
  auto native = sandbox::detail::as_native(n);
  CAF_REQUIRE(native.has_value());
  CAF_CHECK_EQUAL(native->data.arch, AUDIT_ARCH_X86_64);
  CAF_CHECK_EQUAL(native->data.nr, SYS_sendto);
  CAF_CHECK_EQUAL(native->data.args[0], 5u);
  CAF_CHECK_EQUAL(native->data.args[4], low(addr));
  CAF_CHECK_EQUAL(native->data.args[5], sizeof(to));
}

CAF_TEST(an ioctl notifies only when it types into or drives a terminal) {
  // ioctl is 16 on x86-64, 54 on i386, 514 (its compat entry) on x32.
  for (auto d : {call(SYS_ioctl), i386(54), x32(514)}) {
    for (uint64_t request : {TIOCSTI, TIOCLINUX}) {
      d.args[1] = request;
      CAF_CHECK_EQUAL(action(d), SECCOMP_RET_USER_NOTIF);
      // The kernel reads the request as 32 bits: upper bits hide nothing.
      d.args[1] = request | (uint64_t{1} << 32);
      CAF_CHECK_EQUAL(action(d), SECCOMP_RET_USER_NOTIF);
    }
    // What programs ask of their terminals every day runs unwatched.
    for (uint64_t request : {TCGETS, TCSETS, TIOCGWINSZ, TIOCSWINSZ, FIONREAD,
                             TIOCSCTTY, TIOCGPGRP}) {
      d.args[1] = request;
      CAF_CHECK_EQUAL(action(d), SECCOMP_RET_ALLOW);
    }
  }
}

CAF_TEST(another architecture passes unwatched and is not killed) {
  CAF_CHECK_EQUAL(action(call(SYS_connect, 0, 0, AUDIT_ARCH_AARCH64)),
                  SECCOMP_RET_ALLOW);
}

namespace {

/// A UDP socket of the calling process's connected to a TEST-NET-1
/// address (192.0.2.1:9, RFC 5737): no packet leaves, and the watcher
/// reports any non-loopback destination.
sockaddr_in test_net() {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  to.sin_addr.s_addr = htonl(0xC0000201);
  return to;
}

struct abi_fixture {
  sandbox::test::temp_dir dir;
  std::string inside;
  std::string outside;

  abi_fixture() {
    inside = dir.path + "/in";
    outside = dir.path + "/out";
    ::mkdir(inside.c_str(), 0755);
    ::mkdir(outside.c_str(), 0755);
  }

  /// Whether `v` holds exactly the two violations of the children below:
  /// the write of `outside`/f and the connect to 192.0.2.1:9.
  void check(const std::vector<sandbox::violation>& v) {
    CAF_REQUIRE_EQUAL(v.size(), 2u);
    CAF_CHECK(v[0].kind == sandbox::violation_kind::write_denied);
    CAF_CHECK_EQUAL(v[0].detail, outside + "/f");
    CAF_CHECK_EQUAL(v[0].execution, 7u);
    CAF_CHECK(v[1].kind == sandbox::violation_kind::connect_denied);
    CAF_CHECK_EQUAL(v[1].detail, "192.0.2.1:9");
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(abi_tests, abi_fixture)

CAF_TEST(x32 calls are reported as their x86 - 64 twins) {
  using namespace sandbox::test;
  // Made before the fork: the child only makes system calls.
  auto* in = low_copy((inside + "/f").c_str());
  auto* out = low_copy((outside + "/f").c_str());
  auto net = test_net();
  auto* to = low_copy(&net, sizeof(net));
  auto [status, seen] = sandbox::test::watched_child(inside, [&] {
    // Unwatched (a read), allowed (inside), then watched: a write outside
    // and a connect. A kernel without the x32 ABI fails each with ENOSYS
    // after the filter saw it.
    x32_syscall(x32_openat, AT_FDCWD, reinterpret_cast<long>(out), O_RDONLY);
    x32_syscall(x32_openat, AT_FDCWD, reinterpret_cast<long>(in),
                O_WRONLY | O_CREAT, 0644);
    x32_syscall(x32_openat, AT_FDCWD, reinterpret_cast<long>(out),
                O_WRONLY | O_CREAT, 0644);
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    x32_syscall(x32_connect, s, reinterpret_cast<long>(to), sizeof(net));
    return 0;
  });
  CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  check(seen);
}

CAF_TEST(i386 calls are reported as their x86 - 64 twins) {
  using namespace sandbox::test;
  if (!kernel_runs_i386()) {
    CAF_MESSAGE("skipped: this kernel does not run i386 system calls (no "
                "IA32 emulation, or ia32_emulation=0)");
    return;
  }
  auto* in = low_copy((inside + "/f").c_str());
  auto* out = low_copy((outside + "/f").c_str());
  auto net = test_net();
  auto* to = low_copy(&net, sizeof(net));
  auto [status, seen] = sandbox::test::watched_child(inside, [&] {
    i386_syscall(i386_open, reinterpret_cast<long>(out), O_RDONLY);
    i386_syscall(i386_open, reinterpret_cast<long>(in), O_WRONLY | O_CREAT,
                 0644);
    i386_syscall(i386_open, reinterpret_cast<long>(out), O_WRONLY | O_CREAT,
                 0644);
    // connect through the multiplexer: its arguments in memory, 32 bits
    // each.
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    uint32_t args[3] = {static_cast<uint32_t>(s),
                        static_cast<uint32_t>(reinterpret_cast<long>(to)),
                        sizeof(net)};
    i386_syscall(i386_socketcall, SYS_CONNECT,
                 reinterpret_cast<long>(low_copy(args, sizeof(args))));
    return 0;
  });
  CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  check(seen);
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

/// Whether `v` holds a violation of `kind` with exactly `detail`.
bool has(const std::vector<sandbox::violation>& v, sandbox::violation_kind kind,
         const std::string& detail) {
  for (auto& x : v)
    if (x.kind == kind && x.detail == detail && x.execution == 7)
      return true;
  return false;
}

/// A terminal of the test's, raw (typed bytes are readable at once).
struct test_pty {
  int master = -1;
  int slave = -1;
  test_pty() {
    termios raw{};
    ::cfmakeraw(&raw);
    if (::openpty(&master, &slave, nullptr, &raw, nullptr) != 0)
      CAF_FAIL("openpty: " << std::strerror(errno));
  }
  /// Whether anything was typed into it.
  bool typed() const {
    pollfd p{slave, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  ~test_pty() {
    ::close(master);
    ::close(slave);
  }
};

} // namespace

CAF_TEST(typing into a terminal is refused and reported) {
  test_pty tty;
  // The child makes the terminal its controlling one, the case the kernel
  // lets TIOCSTI through for (dev.tty.legacy_tiocsti), then types a byte
  // into it, with the request's upper bits set too, and drives the
  // console. Each fails with EPERM: the exit status counts those that did.
  auto [status, seen] = sandbox::test::watched_child("/nonexistent", [&] {
    char c = 'x';
    char subcode = 0; // TIOCL_*: whatever it is, it never runs
    int refused = 0;
    if (::setsid() < 0 || ::ioctl(tty.slave, TIOCSCTTY, 0) != 0)
      return 100;
    refused += ::syscall(SYS_ioctl, tty.slave, TIOCSTI, &c) == -1
               && errno == EPERM;
    refused += ::syscall(SYS_ioctl, tty.slave,
                         static_cast<unsigned long>(TIOCSTI) | (1ul << 32), &c)
                 == -1
               && errno == EPERM;
    refused += ::syscall(SYS_ioctl, tty.slave, TIOCLINUX, &subcode) == -1
               && errno == EPERM;
    return refused;
  });
  CAF_REQUIRE(WIFEXITED(status));
  CAF_CHECK_EQUAL(WEXITSTATUS(status), 3);
  CAF_CHECK(!tty.typed());
  CAF_CHECK_EQUAL(seen.size(), 3u);
  CAF_CHECK(
    has(seen, sandbox::violation_kind::syscall_denied, "ioctl TIOCSTI"));
  CAF_CHECK(
    has(seen, sandbox::violation_kind::syscall_denied, "ioctl TIOCLINUX"));
}

CAF_TEST(an io_uring is refused and reported) {
  auto [status, seen] = sandbox::test::watched_child("/nonexistent", [] {
    io_uring_params params{};
    long fd = ::syscall(SYS_io_uring_setup, 4, &params);
    return fd == -1 && errno == EPERM ? 0 : 1;
  });
  CAF_REQUIRE(WIFEXITED(status));
  CAF_CHECK_EQUAL(WEXITSTATUS(status), 0);
  CAF_REQUIRE_EQUAL(seen.size(), 1u);
  CAF_CHECK(
    has(seen, sandbox::violation_kind::syscall_denied, "io_uring_setup"));
}

CAF_TEST_FIXTURE_SCOPE(bind_tests, abi_fixture)

CAF_TEST(a unix socket bound outside is reported as a write) {
  auto address = [](const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.data(), path.size());
    return a;
  };
  auto in = address(inside + "/s.sock");
  auto out = address(outside + "/s.sock");
  // An abstract address makes no file.
  auto abstract = address(std::string{"\0sandbox-test-abstract", 23});
  auto [status, seen] = sandbox::test::watched_child(inside, [&] {
    for (auto* a : {&in, &abstract, &out}) {
      int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      // No Landlock here: each bind succeeds, only the watch judges it.
      if (s < 0
          || ::bind(s, reinterpret_cast<sockaddr*>(a), sizeof(sockaddr_un))
               != 0)
        return 1;
    }
    return 0;
  });
  CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CAF_REQUIRE_EQUAL(seen.size(), 1u);
  CAF_CHECK(seen[0].kind == sandbox::violation_kind::write_denied);
  CAF_CHECK_EQUAL(seen[0].detail, outside + "/s.sock");
  CAF_CHECK_EQUAL(seen[0].execution, 7u);
}

CAF_TEST_FIXTURE_SCOPE_END()
