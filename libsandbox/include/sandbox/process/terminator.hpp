#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>

#include "sandbox/execution.hpp"
#include "sandbox/io/reactor.hpp"
#include "sandbox/process/process_tree.hpp"
#include "sandbox/process/reaper.hpp"

namespace sandbox {

/// Runs `plan` against the processes that `query` matches, entirely on the
/// reactor (no actor thread ever waits), then calls `done` with the receipt
/// on a reactor thread. Members that are not in `own_children` are
/// registered with `reaper` so that their zombies, once re-parented to the
/// node, are reaped.
///
/// Cgroup mode (`query.cgroup` set): `first` goes to every process listed
/// in the cgroup's tree, the grace stage ends as soon as `cgroup.events`
/// says `populated 0`, the kill stage is `cgroup.kill` (which also catches
/// what forks meanwhile), and survivors are what the cgroup still holds at
/// the end of `verify`; an empty tree is then removed. No /proc scan.
///
/// Process-group mode: membership (groups, descendants, marker) is re-read
/// from /proc at every stage, so processes forked during the stop are
/// found too; the receipt says `process_group` because an escaper that
/// cleared its marker is invisible to it.
void async_terminate(reactor& r, std::shared_ptr<reaper> reap, tree_query query,
                     std::vector<pid_t> own_children, stop_plan plan,
                     std::function<void(stop_receipt)> done);

} // namespace sandbox
