#pragma once

// Judging one notification of a contained command's seccomp filter
// (syscall_watch.hpp): which refusal the kernel will give the call, read
// from the caller's memory and view while it waits. syscall_watch.cpp runs
// the watch on the reactor; this file decides.

#include <linux/seccomp.h>

#include <optional>

#include "contain/path_judge.hpp"
#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/execution.hpp"

namespace sandbox::detail {

/// `n` as the x86-64 call it is judged as: itself, or for a watched call
/// of another ABI its x86-64 number and arguments; none when it cannot be
/// told.
std::optional<seccomp_notif> as_native(const seccomp_notif& n);

/// What the node answers `n` (an x86-64 call): the violation the kernel
/// will refuse it for, if any, or a refusal of the node's own (see
/// `judge_metadata`, `judge_unix_peer` and the set-id modes of
/// `judge_write`).
verdict judge(const seccomp_notif& n, const watch_policy& policy);

} // namespace sandbox::detail
