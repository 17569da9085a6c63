#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"
#include "sandbox/unique_fd.hpp"

struct sock_fprog;

namespace sandbox {

class cgroup_pool;
class held_cgroup;

/// What a command of a contained session enters before its exec
/// (isolation.hpp). `ns_pidfd` -1: an uncontained launch.
namespace detail {
class session_launcher;
} // namespace detail

struct launch_containment {
  /// A pidfd of the session's init: the child enters all its namespaces.
  int ns_pidfd = -1;
  /// The Landlock ruleset the child restricts itself with; -1: none.
  int landlock_ruleset = -1;
  /// RLIMIT_CPU (seconds), RLIMIT_FSIZE (bytes), RLIMIT_NOFILE; 0 leaves
  /// one as it is.
  uint64_t cpu_seconds = 0;
  uint64_t file_size = 0;
  uint64_t open_files = 0;
  /// `cgroup.procs` of cgroup v1 directories (`session_limits::join_fds`)
  /// the child joins ("0") before it enters the session; -1: unused.
  int join_cgroups[2] = {-1, -1};
  /// A seccomp filter (`watch_filter`) the command installs last; its
  /// listener comes back in `launched_child::watch_listener`. Null: none.
  const sock_fprog* watch_filter = nullptr;
  /// The session's launcher (contain/session_launcher.hpp), which holds
  /// `watch_filter` already: the command is made by it and inherits the
  /// filter, whose listener the session watches; it installs none of its
  /// own. Null: the launching thread makes the command, which installs
  /// the filter itself.
  detail::session_launcher* launcher = nullptr;
  /// A datagram socket pair the command's listener comes back over ([0]
  /// the node's end, [1] the command's), kept by the session so that a
  /// launch makes none; -1: one is made for the launch. Launches that
  /// share a pair must not run at the same time (a session's run one by
  /// one in its actor); a listener a failed launch left in it is closed by
  /// the next.
  int report_pair[2] = {-1, -1};
  /// A pidfd of the node itself, kept by the session: the way back to the
  /// node's PID namespace after a launching thread entered the session's;
  /// -1: one is opened for the launch.
  int node_pidfd = -1;
  /// An `O_PATH` descriptor of the root of the session's own `devpts`
  /// (its `/dev/pts`): a terminal of a contained command is made there,
  /// never on the host's. -1: the session has none, and a launch with a
  /// terminal fails.
  int pts_dir = -1;
  /// The session's root is a host uid of its own
  /// (`contained_session::own_ids`): the child drops the node's groups
  /// before it enters and becomes uid and gid 0 of the session after.
  bool own_ids = false;
};

/// The size of a terminal in characters.
struct terminal_size {
  uint16_t rows = 24;
  uint16_t cols = 80;
};

/// Everything needed to start one child.
struct launch_spec {
  /// Absolute path of the program, e.g. "/bin/sh".
  std::string executable;
  /// Full argv, argv[0] included.
  std::vector<std::string> argv;
  /// Working directory of the child; must exist.
  std::string cwd;
  /// The child's environment: `env_block`'s entries, each replaced by the
  /// entry of the same name in `env` when `env` has one, and the rest of
  /// `env`, in the order of their names.
  env_map env;
  /// `NAME=value` entries in the order of their names (no name twice): the
  /// part of the environment that many launches share, flattened once (a
  /// session's layers below the per-call ones). Null: only `env`.
  std::shared_ptr<const std::vector<std::string>> env_block;
  /// Gives the child a stdin pipe; otherwise its stdin is /dev/null.
  bool pipe_stdin = false;
  /// Gives the child a new pseudo-terminal of this size instead of pipes:
  /// its 0, 1 and 2, and its controlling terminal (the child leads a new
  /// session, `TIOCSCTTY`). The terminal comes from the host's `/dev/ptmx`,
  /// or from the session's own devpts in a contained launch
  /// (`launch_containment::pts_dir`). `pipe_stdin` is then ignored.
  std::optional<terminal_size> terminal;
  /// A cgroup v2 directory the child is born in (`CLONE_INTO_CGROUP`);
  /// empty: the launcher's own cgroup.
  std::string cgroup;
  /// `cgroup`, held open by its owner (a session's execution cgroup,
  /// `held_cgroup`): the child is born in its directory, which the launch
  /// does not open again. Null: the launch opens `cgroup`.
  std::shared_ptr<const held_cgroup> cgroup_held;
  /// Where `cgroup_held` goes once the child was reaped and its owner is
  /// done with it (`child_process::return_cgroup`); null (or no
  /// `cgroup_held`): `cgroup` is removed at the reap if empty.
  std::shared_ptr<cgroup_pool> cgroup_reuse;
  /// An open `/dev/null` (readable, close-on-exec, not 0-2) that the
  /// child's stdin is made from when it gets no pipe, kept by the caller
  /// for all its launches; -1: the launch opens one.
  int dev_null = -1;
  /// Enter a contained session (see `launch`).
  launch_containment contain;
};

/// A started child: its pid (also its process group id) and our pipe ends.
/// With a terminal, `stdout_r` is the terminal's master, `stdin_w` a second
/// descriptor of it, and `stderr_r` empty.
struct launched_child {
  pid_t pid = -1;
  /// Write end of the child's stdin; empty unless `pipe_stdin` was set.
  unique_fd stdin_w;
  unique_fd stdout_r;
  unique_fd stderr_r;
  /// A pidfd (pidfd_open) that becomes readable when the child exits.
  unique_fd pidfd;
  /// The listener of the command's seccomp filter (`launch_containment::
  /// watch_filter`); empty otherwise.
  unique_fd watch_listener;
};

/// Starts a child vfork-style (it shares the parent's memory until it
/// execs, so the cost does not grow with the parent's memory) as the leader
/// of a new process group, with default signal dispositions, an empty
/// signal mask, `PR_SET_PDEATHSIG` SIGKILL and no inherited descriptors
/// beyond 0, 1 and 2, born in `spec.cgroup` when one is given. The launch
/// is a pipeline of small steps, each in src/process/launcher.cpp: pipes,
/// environment, the child's plan, clone, the exec report.
///
/// On x86_64 the child is made by `clone3(CLONE_VM | CLONE_VFORK |
/// CLONE_PIDFD | CLONE_INTO_CGROUP)`; elsewhere, or where clone3 is refused
/// (ENOSYS under some seccomp filters), by `clone(CLONE_VM | CLONE_VFORK |
/// CLONE_PIDFD)`, the child then joining its cgroup by writing to its
/// `cgroup.procs` before the exec. Either way no instruction of the new
/// program runs outside the cgroup.
///
/// A contained launch (`spec.contain.ns_pidfd` set, x86_64 only) goes one
/// step further. Where the node may enter the init's PID namespace
/// (CAP_SYS_ADMIN), the launching thread does so for its next child only,
/// clones the command (born in the session's PID namespace and in the
/// cgroup) and returns to its own; the command joins the init's other
/// namespaces with one `setns` on its pidfd. Elsewhere the cloned child (an
/// entering child sharing the node's descriptor table, never touching it)
/// enters all of them and clones the command with `CLONE_PARENT` (so the
/// command is still the node's child), then exits. The command sets
/// `PR_SET_NO_NEW_PRIVS`, its rlimits and restricts itself with the
/// Landlock ruleset before its exec. Errors of those steps are `io_error`
/// naming the step.
///
/// The death signal fires when the *thread* that launched the child ends:
/// launch from a thread that lives as long as the node (the actor
/// scheduler's workers do).
///
/// Errors: `path_not_found` if `cwd` or the executable does not exist or
/// `cwd` is not a directory (`working directory does not exist: <cwd>`,
/// `working directory is not a directory: <cwd>`), `permission_denied` if
/// either is not accessible (the message names which), `invalid_argument`
/// when arguments and environment exceed the kernel's limits (E2BIG; the
/// message names ARG_MAX and MAX_ARG_STRLEN), `io_error` otherwise (a
/// cgroup that cannot be entered is one, naming it).
result<launched_child> launch(const launch_spec& spec);

/// Opens `/dev/null` for reading, close-on-exec and above 0-2: a child's
/// stdin, per launch or kept for many (`launch_spec::dev_null`). Errors:
/// those of `open` and `fcntl`, naming `/dev/null`.
result<unique_fd> open_dev_null();

/// How `launch` makes children in this process: "clone3" or "clone" (see
/// above); for `sandbox info` and the logs.
std::string_view launch_method() noexcept;

/// Forces the portable `clone` path (tests of that path); process-wide.
void force_clone_fallback(bool on) noexcept;

/// Forces contained launches through an entering child, as on a node that
/// may not enter a session's PID namespace (tests of that path);
/// process-wide.
void force_entering_child(bool on) noexcept;

/// Returns the environment of this process as a map.
env_map current_environment();

} // namespace sandbox
