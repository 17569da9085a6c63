#pragma once

// Judging one notification of a contained command's seccomp filter
// (syscall_watch.hpp): which refusal the kernel will give the call, read
// from the caller's memory and view while it waits. syscall_watch.cpp runs
// the watch on the reactor; this file decides.

#include <linux/seccomp.h>

#include <optional>

#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/execution.hpp"

namespace sandbox::detail {

/// `n` as the x86-64 call it is judged as: itself, or for a watched call
/// of another ABI its x86-64 number and arguments; none when it cannot be
/// told.
std::optional<seccomp_notif> as_native(const seccomp_notif& n);

/// The violation the kernel will refuse `n` (an x86-64 call) for, if any.
std::optional<violation> judge(const seccomp_notif& n,
                               const watch_policy& policy);

} // namespace sandbox::detail
