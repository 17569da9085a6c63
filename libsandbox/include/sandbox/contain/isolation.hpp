#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

class reactor;

/// How far a session is isolated from its host (docs/security.md).
enum class isolation_mode : uint8_t {
  /// Commands run as the node's user and see what it sees.
  none,
  /// Own user, PID, mount, IPC, UTS and network namespaces per session,
  /// Landlock on every command, rlimits and cgroup limits.
  contained,
};

/// "none" or "contained".
std::string_view to_string(isolation_mode x) noexcept;

/// Parses "none" or "contained". Errors: `invalid_argument` naming `text`.
result<isolation_mode> parse_isolation(std::string_view text);

/// Limits of a contained session. Zero means "no limit" everywhere.
struct isolation_limits {
  /// RLIMIT_CPU of every command (seconds of CPU time per process).
  uint64_t cpu_seconds = 3600;
  /// RLIMIT_FSIZE of every command (bytes per file written).
  uint64_t file_size = uint64_t{16} << 30;
  /// RLIMIT_NOFILE of every command.
  uint64_t open_files = 4096;
  /// Memory of the session's processes together (bytes): `memory.max` of
  /// its cgroup v2, or `memory.limit_in_bytes` of its cgroup v1 where only
  /// v1 has the `memory` controller.
  uint64_t memory = 0;
  /// Processes of the session together: `pids.max` of its cgroup (v2, or
  /// v1 where only v1 has the `pids` controller).
  uint64_t processes = 0;
};

/// What this host can give a contained session, probed once per process
/// (`host_isolation`).
struct isolation_support {
  /// A throwaway session init was made: user, PID, mount, IPC, UTS and
  /// network namespaces, a private /tmp, a /proc of its own, loopback up.
  bool namespaces = false;
  /// Why not (the step and errno that failed); empty when they work.
  std::string namespaces_detail;
  /// Landlock ABI version (0: none).
  int landlock_abi = 0;
  std::string landlock_detail;
  /// cgroup v2 controllers the node's cgroups can use: those enabled for
  /// the children of its own cgroup (its `cgroup.subtree_control`).
  std::vector<std::string> cgroup_controllers;
  /// Controllers (`memory`, `pids`) that v2 lacks but a cgroup v1
  /// hierarchy gives: {controller, the node's own directory there}, each
  /// checked writable (a directory was made and removed below it).
  std::vector<std::pair<std::string, std::string>> cgroup_v1;

  /// Seccomp user notification works: refused writes and connections are
  /// reported as violations (syscall_watch.hpp); without it they are only
  /// refused.
  bool syscall_watch = false;

  /// fanotify permission events work (`CAP_SYS_ADMIN`): opens of denied
  /// paths are refused with `EPERM` and reported (read_guard.hpp); without
  /// them denied paths read as empty and are not reported.
  bool read_watch = false;

  /// With `read_watch`, the node may also serve FUSE (`/dev/fuse`): a name
  /// looked up below a denied directory is refused with `EPERM` and
  /// reported too; without it such a name is just missing (`ENOENT`).
  bool lookup_watch = false;

  /// Whether `name` is among `cgroup_controllers` or `cgroup_v1`.
  bool has_controller(std::string_view name) const;

  /// The node's directory in the v1 hierarchy of `name`; empty when v2
  /// has the controller or no usable v1 hierarchy does.
  std::string v1_directory(std::string_view name) const;

  /// What is missing for a contained session with `limits`, one phrase per
  /// item joined by "; " (empty: everything is there), e.g.
  /// `user namespaces (clone: Operation not permitted)`.
  std::string missing(const isolation_limits& limits = {}) const;
};

/// The lowest Landlock ABI a contained session needs: 3 (truncate is
/// controlled from ABI 3 on; below it, a command could truncate any file).
constexpr int min_landlock_abi = 3;

/// Probes the host once (the first call makes and ends a throwaway session
/// init; later calls return the same answer). Thread-safe.
const isolation_support& host_isolation();

/// The memory and process limits of one contained session on the cgroup
/// controllers the host offers, and the counters that tell when they were
/// hit. A controller v2 lacks comes from its v1 hierarchy: a directory
/// `sandbox-<session id>` below the node's own there, which each command
/// joins before it enters the session (`join_fds`) and which is removed
/// with this object (once empty).
class session_limits {
public:
  /// How often the limits were hit so far.
  struct counters {
    /// Processes the kernel killed at the memory limit (`oom_kill`).
    uint64_t oom_kills = 0;
    /// Forks and clones refused at the process limit (`max` of
    /// `pids.events`).
    uint64_t forks_refused = 0;
  };

  /// Applies `limits` (the non-zero memory and process limits; nothing to
  /// do for none): v2 on `v2_dir`, the session's cgroup (empty: no cgroup
  /// mode; enabling the controllers from `v2_enable_from` down), v1 where
  /// only v1 has the controller. Errors: `unsupported` naming a missing
  /// controller, `io_error` naming the file that could not be written.
  static result<std::shared_ptr<session_limits>>
  make(const isolation_limits& limits, const std::string& v2_enable_from,
       const std::string& v2_dir, const std::string& session_id);

  ~session_limits();

  session_limits(const session_limits&) = delete;
  session_limits& operator=(const session_limits&) = delete;

  /// Reads the counters (a missing file reads as 0).
  counters read() const;

  /// `cgroup.procs` of each v1 directory (write-only): a command writes
  /// "0" to each to join them before it enters the session.
  std::vector<int> join_fds() const;

  const isolation_limits& limits() const noexcept {
    return limits_;
  }

private:
  session_limits() = default;

  isolation_limits limits_;
  /// The file with the `oom_kill` line (v2 `memory.events`, v1
  /// `memory.oom_control`) and the `pids.events`; empty: no such limit.
  std::string memory_events_;
  std::string pids_events_;
  std::vector<std::string> v1_dirs_;
  std::vector<unique_fd> join_;
};

/// What one contained session is made of.
struct containment_spec {
  /// Absolute, existing; writable by commands.
  std::string working_directory;
  /// Absolute, existing; writable by commands.
  std::string home_directory;
  /// Absolute paths that commands must not read: a directory reads as an
  /// empty one, a file as an empty file (mounted over in the session's
  /// mount namespace; missing paths are skipped). The working directory
  /// and the home stay reachable when they lie inside one.
  std::vector<std::string> deny;
  /// Denied path -> a placeholder of the node's to bind over it instead of
  /// an empty file or directory (read_guard.hpp: its opens are reported).
  std::map<std::string, std::string> placeholders;
  /// Denied directory -> a detached mount of the node's (a descriptor the
  /// caller keeps open until `start` returned) to move over it instead
  /// (denied_directory.hpp: names looked up below it are reported too).
  std::map<std::string, int> mounts;
  /// A cgroup v2 directory the init is born in; empty: the caller's.
  std::string cgroup;
  isolation_limits limits;
  /// Kept until the init is reaped (then nothing of the session runs, and
  /// its v1 directories can go).
  std::shared_ptr<session_limits> cgroup_limits;
};

/// The namespaces of one contained session, held by a small init process
/// (PID 1 of the session's PID namespace, which reaps whatever is
/// re-parented to it), and the Landlock ruleset of its commands. Commands
/// enter the namespaces at launch (`launch_spec::contain`). Destroying it
/// kills the init: the kernel then kills every process of the namespace.
class contained_session {
public:
  /// Starts the init and builds the ruleset. Errors: `unsupported` naming
  /// the step that failed (e.g. `cannot mount proc: Operation not
  /// permitted`), `io_error` otherwise.
  static result<std::unique_ptr<contained_session>>
  start(const containment_spec& spec);

  /// Kills the init; reaps it on `r` when one was given (`reap_on`),
  /// else here, waiting until the kernel has ended the namespace.
  ~contained_session();

  contained_session(const contained_session&) = delete;
  contained_session& operator=(const contained_session&) = delete;

  /// The init's pid (in the node's PID namespace).
  pid_t init_pid() const noexcept {
    return pid_;
  }

  /// A pidfd of the init: `setns` on it enters every namespace at once.
  int init_pidfd() const noexcept {
    return pidfd_.get();
  }

  /// The Landlock ruleset every command restricts itself with.
  int ruleset_fd() const noexcept {
    return ruleset_.get();
  }

  const isolation_limits& limits() const noexcept {
    return limits_;
  }

  /// Reap the init on `r` instead of blocking in the destructor (its exit
  /// waits until the node has reaped every command of the session).
  void reap_on(reactor& r) noexcept {
    reactor_ = &r;
  }

  /// Kills the init now (idempotent); the kernel kills everything inside.
  void kill() noexcept;

private:
  friend const isolation_support& host_isolation();

  contained_session() = default;

  /// `start`; the probe makes no ruleset (it needs the probe's answer).
  static result<std::unique_ptr<contained_session>>
  start(const containment_spec& spec, bool with_ruleset);

  pid_t pid_ = -1;
  unique_fd pidfd_;
  unique_fd ruleset_;
  isolation_limits limits_;
  std::shared_ptr<session_limits> cgroup_limits_;
  reactor* reactor_ = nullptr;
};

/// Writes `memory.max` and `pids.max` of `limits` (the non-zero ones) into
/// cgroup `dir`, first enabling the controllers in the `cgroup.subtree_control`
/// of each directory from `enable_from` down to `dir`'s parent (directories
/// of the node only). Errors: `unsupported` naming a missing controller,
/// `io_error` naming the file that could not be written.
result<void> apply_cgroup_limits(const std::string& enable_from,
                                 const std::string& dir,
                                 const isolation_limits& limits);

} // namespace sandbox
