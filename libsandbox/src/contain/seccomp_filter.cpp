// The seccomp program of contained commands (syscall_watch.hpp), built
// with libseccomp.
#include "contain/seccomp_filter.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/net.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

namespace detail {

namespace {

/// Every call that names a process: they notify (ptrace only to attach,
/// see the program) and are judged by `judge_pid`.
constexpr std::array<pid_call, 9> pid_calls = {{
  {SYS_kill, "kill", 0},
  {SYS_tkill, "tkill", 0},
  {SYS_tgkill, "tgkill", 1},
  {SYS_rt_sigqueueinfo, "rt_sigqueueinfo", 0},
  {SYS_rt_tgsigqueueinfo, "rt_tgsigqueueinfo", 1},
  {SYS_pidfd_open, "pidfd_open", 0},
  {SYS_process_vm_readv, "process_vm_readv", 0},
  {SYS_process_vm_writev, "process_vm_writev", 0},
  {SYS_ptrace, "ptrace", 1},
}};

/// A watched system call by name (as libseccomp knows it) and the x86-64
/// call it is judged as.
struct named_call {
  const char* name;
  long native;
};

/// System calls that always notify besides those of `pid_calls`: they
/// connect, or they write a path (`bind` of a unix socket makes a file).
/// `truncate64` exists on i386 only.
constexpr std::array<named_call, 20> always_watched = {{
  {"connect", SYS_connect},   {"creat", SYS_creat},
  {"mkdir", SYS_mkdir},       {"mkdirat", SYS_mkdirat},
  {"unlink", SYS_unlink},     {"unlinkat", SYS_unlinkat},
  {"rmdir", SYS_rmdir},       {"rename", SYS_rename},
  {"renameat", SYS_renameat}, {"renameat2", SYS_renameat2},
  {"link", SYS_link},         {"linkat", SYS_linkat},
  {"symlink", SYS_symlink},   {"symlinkat", SYS_symlinkat},
  {"mknod", SYS_mknod},       {"mknodat", SYS_mknodat},
  {"truncate", SYS_truncate}, {"truncate64", SYS_truncate},
  {"openat2", SYS_openat2},   {"bind", SYS_bind},
}};

/// System calls that change a file's metadata (mode, owner, times,
/// extended attributes): always notify, judged by `judge_metadata`
/// (Landlock has no right for them). i386 has the 32-bit-uid `chown32`
/// calls and `utimensat_time64` besides; fchmodat2 (452 everywhere) is
/// newer than <sys/syscall.h>.
constexpr std::array<named_call, 22> metadata_calls = {{
  {"chmod", SYS_chmod},
  {"fchmod", SYS_fchmod},
  {"fchmodat", SYS_fchmodat},
  {"fchmodat2", 452},
  {"chown", SYS_chown},
  {"fchown", SYS_fchown},
  {"lchown", SYS_lchown},
  {"fchownat", SYS_fchownat},
  {"chown32", SYS_chown},
  {"fchown32", SYS_fchown},
  {"lchown32", SYS_lchown},
  {"utimensat", SYS_utimensat},
  {"utimensat_time64", SYS_utimensat},
  {"utimes", SYS_utimes},
  {"futimesat", SYS_futimesat},
  {"utime", SYS_utime},
  {"setxattr", SYS_setxattr},
  {"lsetxattr", SYS_lsetxattr},
  {"fsetxattr", SYS_fsetxattr},
  {"removexattr", SYS_removexattr},
  {"lremovexattr", SYS_lremovexattr},
  {"fremovexattr", SYS_fremovexattr},
}};

/// The calls that notify only for some arguments (see `make_filter`).
constexpr std::array<named_call, 5> sometimes_watched = {{
  {"open", SYS_open},
  {"openat", SYS_openat},
  {"ptrace", SYS_ptrace},
  {"ioctl", SYS_ioctl},
  {"sendto", SYS_sendto},
}};

/// Calls the node refuses whatever their arguments (`refused_call_of`):
/// the operations of an io_uring run in the kernel's workers, where no
/// filter of the command sees them; `mount_setattr` changes the flags of a
/// mount of the session's view (read-only, nosuid, nodev), which Landlock
/// does not cover.
constexpr std::array<named_call, 2> always_refused = {{
  {"io_uring_setup", SYS_io_uring_setup},
  {"mount_setattr", SYS_mount_setattr},
}};

/// An ioctl request the node refuses, and its name.
struct refused_ioctl {
  uint32_t request;
  const char* name;
};

/// Terminal requests that reach past the command: TIOCSTI pushes bytes
/// into a terminal's input as if typed (a shell reading that terminal
/// runs them), TIOCLINUX reads and drives the console.
constexpr std::array<refused_ioctl, 2> refused_ioctls = {{
  {TIOCSTI, "ioctl TIOCSTI"},
  {TIOCLINUX, "ioctl TIOCLINUX"},
}};

/// The ABIs an x86-64 process can make system calls with besides its own:
/// i386 (`int $0x80`) and x32 (the number with `__X32_SYSCALL_BIT`). A
/// seccomp filter sees every one of them.
constexpr std::array<uint32_t, 2> other_abis = {SCMP_ARCH_X86, SCMP_ARCH_X32};

struct release_filter {
  void operator()(void* ctx) const noexcept {
    seccomp_release(ctx);
  }
};

/// Throws on a libseccomp error (a negative errno).
void check(int rc, const char* what) {
  if (rc < 0)
    throw std::system_error(-rc, std::generic_category(), what);
}

/// The program, for every ABI (`other_abis` and x86-64): the watched calls
/// notify and anything else is allowed; `open` and `openat` notify only
/// when their flags (argument 1 and 2) ask for a write, `ptrace` only for
/// the requests that attach (the others name a tracee already attached, so
/// a debugger's many peeks run unwatched), `ioctl` only for the requests
/// of `refused_ioctls`. libseccomp adds each call to each ABI that has it,
/// i386's `socketcall(SYS_CONNECT, ...)` for `connect` (and `SYS_BIND`
/// for `bind`), and finds a number by a binary search (optimize level 2): the
/// kernel runs the program for every system call number when the filter is
/// attached (to cache those it always allows), once per command.
std::vector<sock_filter> make_filter() {
  std::unique_ptr<void, release_filter> ctx{seccomp_init(SCMP_ACT_ALLOW)};
  if (!ctx)
    throw std::runtime_error("seccomp_init failed");
  auto* c = ctx.get();
  for (auto abi : other_abis)
    check(seccomp_arch_add(c, abi), "seccomp_arch_add");
  // The filter itself refuses nothing, whatever the ABI: what is refused
  // is refused by the node's answer (see `refused_call_of`).
  check(seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW),
        "seccomp_attr_set(ACT_BADARCH)");
  check(seccomp_attr_set(c, SCMP_FLTATR_CTL_OPTIMIZE, 2),
        "seccomp_attr_set(CTL_OPTIMIZE)");
  auto notify = [c](const char* name, std::vector<scmp_arg_cmp> when = {}) {
    check(seccomp_rule_add_array(c, SCMP_ACT_NOTIFY,
                                 seccomp_syscall_resolve_name(name),
                                 static_cast<unsigned>(when.size()),
                                 when.empty() ? nullptr : when.data()),
          name);
  };
  for (auto& call : always_watched)
    notify(call.name);
  for (auto& call : always_refused)
    notify(call.name);
  for (auto& call : metadata_calls)
    if (seccomp_syscall_resolve_name(call.name) != __NR_SCMP_ERROR)
      notify(call.name);
  // A send names its destination in its address (sendto's argument 4:
  // null on a connected socket, so that the common send runs unwatched).
  // sendmsg is not watched: its address is in its message, and the launch
  // hands the listener to the node with a sendmsg after the filter is on.
  notify("sendto", {{4, SCMP_CMP_NE, 0, 0}});
  // i386's socketcall(SYS_SENDTO) has its address in the caller's memory,
  // out of the program's sight: it always notifies (the judge reads it;
  // libseccomp adds socketcall rules to i386 only).
  notify("socketcall", {{0, SCMP_CMP_EQ, SYS_SENDTO, 0}});
  for (auto& call : pid_calls)
    if (call.nr != SYS_ptrace)
      notify(call.name);
  // An open writes when any one of the flags is set: one rule per flag.
  for (uint32_t flag : {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC}) {
    notify("open", {{1, SCMP_CMP_MASKED_EQ, flag, flag}});
    notify("openat", {{2, SCMP_CMP_MASKED_EQ, flag, flag}});
  }
  for (uint64_t request : {PTRACE_ATTACH, PTRACE_SEIZE})
    notify("ptrace", {{0, SCMP_CMP_EQ, request, 0}});
  // The kernel takes an ioctl's request as 32 bits: the upper ones of the
  // argument must not hide a request from the rule.
  for (auto& r : refused_ioctls)
    notify("ioctl", {{1, SCMP_CMP_MASKED_EQ, 0xffffffffu, r.request}});
  // 2.5.4 exports to a descriptor only.
  unique_fd out{::memfd_create("sandbox-seccomp", MFD_CLOEXEC)};
  if (!out)
    throw std::system_error(errno, std::generic_category(), "memfd_create");
  check(seccomp_export_bpf(c, out.get()), "seccomp_export_bpf");
  auto size = ::lseek(out.get(), 0, SEEK_END);
  if (size <= 0 || size % sizeof(sock_filter) != 0)
    throw std::runtime_error("seccomp_export_bpf wrote no program");
  std::vector<sock_filter> program(static_cast<size_t>(size)
                                   / sizeof(sock_filter));
  auto* bytes = reinterpret_cast<char*>(program.data());
  for (off_t done = 0; done < size;) {
    auto n = ::pread(out.get(), bytes + done, static_cast<size_t>(size - done),
                     done);
    if (n <= 0)
      throw std::system_error(errno, std::generic_category(),
                              "reading the exported seccomp program");
    done += n;
  }
  return program;
}

/// Every watched call of `other_abis`, from libseccomp's tables.
const std::vector<foreign_call>& foreign_calls() {
  static const std::vector<foreign_call> calls = [] {
    std::vector<foreign_call> out;
    auto add = [&out](const char* name, long native, bool mux = false) {
      for (auto abi : other_abis) {
        auto nr = seccomp_syscall_resolve_name_arch(abi, name);
        if (nr >= 0)
          out.push_back({abi, nr, native, mux});
      }
    };
    for (auto& call : always_watched)
      add(call.name, call.native);
    for (auto& call : sometimes_watched)
      add(call.name, call.native);
    for (auto& call : always_refused)
      add(call.name, call.native);
    for (auto& call : metadata_calls)
      add(call.name, call.native);
    for (auto& call : pid_calls)
      add(call.name, call.nr);
    // i386's connect and bind through the multiplexer (see `as_native`).
    add("socketcall", -1, true);
    return out;
  }();
  return calls;
}

} // namespace

const pid_call* pid_call_of(long nr) {
  for (auto& c : pid_calls)
    if (c.nr == nr)
      return &c;
  return nullptr;
}

const char* refused_call_of(const seccomp_data& d) {
  if (d.arch != AUDIT_ARCH_X86_64
      || (static_cast<uint32_t>(d.nr) & __X32_SYSCALL_BIT) != 0)
    return nullptr;
  for (auto& c : always_refused)
    if (c.native == d.nr)
      return c.name;
  if (d.nr == SYS_ioctl)
    for (auto& r : refused_ioctls)
      if (static_cast<uint32_t>(d.args[1]) == r.request)
        return r.name;
  return nullptr;
}

const foreign_call* foreign_call_of(const seccomp_data& d) {
  auto abi = d.arch;
  if (abi == AUDIT_ARCH_X86_64
      && (static_cast<uint32_t>(d.nr) & __X32_SYSCALL_BIT) != 0)
    abi = SCMP_ARCH_X32;
  for (auto& c : foreign_calls())
    if (c.abi == abi && c.nr == d.nr)
      return &c;
  return nullptr;
}

} // namespace detail

const sock_fprog* watch_filter() noexcept {
  static const std::vector<sock_filter> program = detail::make_filter();
  static const sock_fprog prog{static_cast<unsigned short>(program.size()),
                               const_cast<sock_filter*>(program.data())};
  return &prog;
}

} // namespace sandbox
