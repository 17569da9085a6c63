#include "contain/privilege_filter.hpp"

#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "sandbox/log.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox::detail {

namespace {

struct release_filter {
  void operator()(void* ctx) const noexcept {
    seccomp_release(ctx);
  }
};

/// A call and the argument that holds its mode.
struct mode_call {
  const char* name;
  unsigned mode_arg;
};

constexpr mode_call mode_calls[] = {
  {"chmod", 1},     {"fchmod", 1}, {"fchmodat", 2},
  {"fchmodat2", 2}, {"mknod", 1},  {"mknodat", 2},
};

/// The program, or an empty one with `error` set.
std::vector<sock_filter> make_program(std::string& error) {
  std::unique_ptr<void, release_filter> ctx{seccomp_init(SCMP_ACT_ALLOW)};
  if (!ctx) {
    error = "seccomp_init failed";
    return {};
  }
  auto* c = ctx.get();
  int rc = 0;
  for (auto abi : {SCMP_ARCH_X86, SCMP_ARCH_X32})
    if (rc >= 0)
      rc = seccomp_arch_add(c, abi);
  if (rc >= 0)
    rc = seccomp_attr_set(c, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW);
  // One rule per bit: a rule compares (argument & mask) == value.
  for (auto& call : mode_calls) {
    int nr = seccomp_syscall_resolve_name(call.name);
    if (nr == __NR_SCMP_ERROR)
      continue;
    for (unsigned bit : {S_ISUID, S_ISGID}) {
      if (rc < 0)
        break;
      struct scmp_arg_cmp cmp {
        call.mode_arg, SCMP_CMP_MASKED_EQ, bit, bit
      };
      rc = seccomp_rule_add_array(c, SCMP_ACT_ERRNO(EPERM), nr, 1, &cmp);
    }
  }
  // The view's mounts keep their attributes: Landlock covers mount,
  // umount and move_mount, not mount_setattr, which could make a read-only
  // bind writable or lift nosuid.
  if (rc >= 0)
    rc = seccomp_rule_add_array(c, SCMP_ACT_ERRNO(EPERM),
                                seccomp_syscall_resolve_name("mount_setattr"),
                                0, nullptr);
  unique_fd out{::memfd_create("sandbox-privilege-filter", MFD_CLOEXEC)};
  if (rc >= 0 && !out)
    rc = -errno;
  if (rc >= 0)
    rc = seccomp_export_bpf(c, out.get());
  if (rc < 0) {
    error = std::strerror(-rc);
    return {};
  }
  auto size = ::lseek(out.get(), 0, SEEK_END);
  std::vector<sock_filter> program(
    size > 0 ? static_cast<size_t>(size) / sizeof(sock_filter) : 0);
  auto* bytes = reinterpret_cast<char*>(program.data());
  for (off_t done = 0; done < size;) {
    auto n = ::pread(out.get(), bytes + done, static_cast<size_t>(size - done),
                     done);
    if (n <= 0) {
      error = "reading the exported program";
      return {};
    }
    done += n;
  }
  return program;
}

} // namespace

const sock_fprog* privilege_filter() noexcept {
  static std::string error;
  static const std::vector<sock_filter> program = make_program(error);
  static const sock_fprog prog{static_cast<unsigned short>(program.size()),
                               const_cast<sock_filter*>(program.data())};
  if (program.empty()) {
    static const bool logged = [] {
      log::logger()->error("the seccomp program against set-uid bits cannot "
                           "be built: {}",
                           error);
      return true;
    }();
    (void) logged;
    return nullptr;
  }
  return &prog;
}

} // namespace sandbox::detail
