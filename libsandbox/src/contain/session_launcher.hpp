#pragma once

// The launcher of a contained session (contain/enter.cpp): one process per
// session that holds the session's seccomp watch, so that its commands
// inherit the filter instead of each installing (and the kernel compiling)
// its own.

#include <sys/types.h>

#include <memory>
#include <mutex>

#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

struct sock_fprog;

namespace sandbox::detail {

struct child_plan;

/// A child of the node that shares its memory and descriptor table
/// (CLONE_VM | CLONE_FILES) but not its thread group, made once per
/// contained session: it enters the session's PID namespace for its
/// children (it stays in the node's, so nothing of the session can name,
/// signal or trace it), installs the session's watch filter with a
/// listener (`take_listener`), then makes each command on request with
/// CLONE_PARENT, so that the command is the node's child exactly as one
/// the launching thread made itself, and starts with the filter already in
/// place. Between requests it sleeps on a futex; it runs only raw system
/// calls (child_syscall.hpp). It dies with the thread that made it
/// (PR_SET_PDEATHSIG), and is asked to exit and reaped when the session
/// lets go of it.
class session_launcher {
public:
  /// Starts the launcher of the session whose init `ns_pidfd` names;
  /// `unsupported` where the node may not enter the PID namespace itself
  /// or the filter cannot be installed (the session then launches as
  /// before: each command installs its own).
  static result<std::unique_ptr<session_launcher>>
  start(int ns_pidfd, const sock_fprog* filter);

  ~session_launcher();

  session_launcher(const session_launcher&) = delete;
  session_launcher& operator=(const session_launcher&) = delete;

  /// The listener of the launcher's filter (once): every command of the
  /// session notifies it.
  unique_fd take_listener();

  /// Makes the command of `plan` (`plan.inner`, `plan.direct`, its stack
  /// `stack`) in `cgroup_fd` (-1: none) and waits until it has executed
  /// or failed (CLONE_VFORK, as a launching thread's clone). Returns its
  /// pid, or -errno; -ESRCH when the launcher is gone (its thread ended):
  /// the caller launches without it.
  long launch(child_plan& plan, int cgroup_fd, char* stack);

  /// The launcher's pid (tests).
  pid_t pid() const noexcept;

  struct shared;

private:
  session_launcher() = default;

  std::mutex mtx_;
  shared* shared_ = nullptr;
  unique_fd pidfd_;
  pid_t pid_ = 0;
  bool gone_ = false;
};

} // namespace sandbox::detail
