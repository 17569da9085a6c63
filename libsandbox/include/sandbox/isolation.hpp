#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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
  /// `memory.max` of the session's cgroup (bytes); needs the cgroup v2
  /// `memory` controller.
  uint64_t memory = 0;
  /// `pids.max` of the session's cgroup; needs the `pids` controller.
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

  /// Whether `name` is among `cgroup_controllers`.
  bool has_controller(std::string_view name) const;

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
  /// A cgroup v2 directory the init is born in; empty: the caller's.
  std::string cgroup;
  isolation_limits limits;
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
