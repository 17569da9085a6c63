#pragma once

// The machinery of a contained session, below `containment`
// (containment.hpp): its init and namespaces, its cgroup limits. Not
// installed: for this project's own programs and tests.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/contain/isolation.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

class reactor;

namespace detail {
class id_lease;
} // namespace detail

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
  /// Those files, opened once (`read` runs at every launch and result);
  /// none where the open failed (the path is read then).
  unique_fd memory_events_fd_;
  unique_fd pids_events_fd_;
  std::vector<std::string> v1_dirs_;
  std::vector<unique_fd> join_;
};

/// What one contained session is made of.
struct containment_spec {
  /// Absolute, existing; writable by commands.
  std::string working_directory;
  /// Absolute, existing; writable by commands.
  std::string home_directory;
  /// Absolute, existing host paths the view shows read-only at the same
  /// path (docs/security.md, "What a contained command sees").
  std::vector<std::string> allow_read;
  /// Absolute, existing host paths the view shows writable at the same
  /// path; commands may write below them like in the working directory.
  std::vector<std::string> allow_write;
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
  /// The host ids whose one is the session's own uid and gid where the node
  /// may map them (`host_isolation().own_ids`; docs/security.md,
  /// "Identity"). Count 0 (the default): the session's root is the node's
  /// uid, as on a node that may not.
  uint32_t id_base = default_session_id_base;
  uint32_t id_count = 0;
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

  /// The host uid and gid of the session's root (its own one, docs/security.md
  /// "Identity"); -1 when it is the node's own uid (`own_ids` false).
  int64_t session_uid() const noexcept;

  /// Whether the session's root has a host uid of its own: commands drop
  /// the node's groups and become it when they enter
  /// (`launch_containment::own_ids`).
  bool own_ids() const noexcept {
    return ids_ != nullptr;
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
  start(const containment_spec& spec, bool with_ruleset, bool own_ids);

  pid_t pid_ = -1;
  unique_fd pidfd_;
  unique_fd ruleset_;
  isolation_limits limits_;
  std::shared_ptr<session_limits> cgroup_limits_;
  /// Held until the init is reaped (nothing runs as the id afterwards).
  std::shared_ptr<detail::id_lease> ids_;
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
