#pragma once

// What a contained command may not give the files it writes
// (docs/security.md, "Identity"): a file the session makes in a writable
// directory belongs to the node's uid on the host, so a set-uid or set-gid
// bit on it is a privilege of the node's uid for whoever runs it later.
// A command installs this seccomp program where the node has no watch
// (the watch refuses and reports the same calls, syscall_watch.hpp): the
// mode-changing calls whose mode carries S_ISUID or S_ISGID fail with
// EPERM, for every ABI of the architecture (the kernel compares the mode
// argument itself, nothing the caller could change after the check). The
// command also has no CAP_FSETID (a write then clears such a bit a create
// gave) nor CAP_SETFCAP (no file capabilities) in its bounding set
// (enter.cpp). `mount_setattr` fails with EPERM too: the view's mounts keep
// their read-only, nosuid and nodev attributes.

#include <linux/filter.h>

namespace sandbox::detail {

/// The program (built once per process); null where libseccomp could not
/// build it (the error is logged once).
const sock_fprog* privilege_filter() noexcept;

} // namespace sandbox::detail
