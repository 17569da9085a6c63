#include "sandbox/fs/acting_as.hpp"

#include <sys/syscall.h>
#include <unistd.h>

namespace sandbox::fs {

// setfsuid and setfsgid return the previous id whatever happens; glibc's
// setgroups would change every thread of the node (it broadcasts), the raw
// call changes the caller only.

acting_as::acting_as(file_ids ids) noexcept {
  if (!ids.own())
    return;
  auto n = ::getgroups(0, nullptr);
  if (n > 0) {
    groups_.resize(static_cast<size_t>(n));
    n = ::getgroups(n, groups_.data());
    groups_.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  ::syscall(SYS_setgroups, 0, nullptr);
  gid_
    = static_cast<gid_t>(::syscall(SYS_setfsgid, static_cast<gid_t>(ids.gid)));
  uid_
    = static_cast<uid_t>(::syscall(SYS_setfsuid, static_cast<uid_t>(ids.uid)));
  active_ = true;
}

acting_as::~acting_as() {
  if (!active_)
    return;
  ::syscall(SYS_setfsuid, uid_);
  ::syscall(SYS_setfsgid, gid_);
  ::syscall(SYS_setgroups, groups_.size(), groups_.data());
}

} // namespace sandbox::fs
