#pragma once

// The settings a node shares with its sessions (`runtime_config`), and the
// runtime they make, opaque here: a node's machinery (reactor, reaper,
// cgroups, file pool) is not part of the public API.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sandbox/contain/isolation.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"

namespace sandbox::actors {

/// How a node holds its sessions' process trees (docs/security.md).
enum class containment_choice : uint8_t {
  /// The cgroup mode where a writable cgroup v2 hierarchy exists, else the
  /// process-group mode.
  automatic,
  /// The cgroup mode or nothing: `validate` refuses the config where it
  /// cannot work.
  cgroup,
  /// The process-group mode, even where cgroups would work (tests of the
  /// fallback; hosts that manage cgroups themselves).
  process_group,
};

/// The limits of contained sessions whose config sets none, unless the
/// node's config says otherwise (docs/security.md, "Limits"): 2 GiB of
/// memory and 512 processes per session, a 1 GiB private /tmp, and the
/// other `isolation_limits` defaults.
inline isolation_limits default_contained_limits() {
  isolation_limits l;
  l.memory = uint64_t{2} << 30;
  l.processes = 512;
  l.tmp_size = uint64_t{1} << 30;
  return l;
}

/// Settings of a node that every session shares. `validate` says whether a
/// node can work with them; a node started with invalid ones refuses every
/// request with that error.
struct runtime_config {
  /// The shell that runs commands (§1): `<shell> -c <command>`. An absolute
  /// path to an executable file.
  std::string shell = "/bin/sh";
  /// Threads of the shared reactor; at least 1 (a runtime made directly
  /// with 0, never a node's, has a reactor its owner runs: sandbox::reactor).
  /// One by default: a second thread only adds hand-overs between the two
  /// (docs/benchmarks.md, "One reactor thread").
  size_t reactor_threads = 1;
  /// Retained bytes per stream of a result (§9); at least 1.
  uint64_t output_cap = default_output_cap;
  /// Output the node's long-lived processes may keep together, running
  /// and exited (each reserves its `retain` while its session lists it;
  /// docs/processes.md). A start beyond it is refused.
  uint64_t process_retain_total = uint64_t{1} << 30;
  /// SIGTERM, grace, SIGKILL (semantics §24): `first` a signal number, `grace`
  /// and `verify` not negative, `poll` positive.
  stop_plan stop;
  /// How long an execution whose shell has exited waits for a background
  /// descendant to close the output pipes before its result is delivered;
  /// not negative.
  std::chrono::milliseconds linger{100};
  /// Where the default home of sessions lives:
  /// `<temp_directory>/sandbox-<uid>/home`. Empty: `$TMPDIR` as the runtime
  /// is made, or `/tmp` when that is unset or empty.
  std::string temp_directory;
  /// The process is only a node (CLI, serve): it becomes a child subreaper
  /// (orphaned descendants are re-parented to it), installs a SIGCHLD
  /// handler (with SA_RESTART) and reaps every orphan, not only the ones
  /// known to be a session's. Leave it off in a host application: the node
  /// then changes neither its SIGCHLD disposition nor its orphan handling.
  bool reap_all_orphans = false;
  /// Threads that run the file operations of every session of the node
  /// (the filesystem workers hand their blocking I/O to them); 1 to 64.
  size_t file_threads = 2;
  /// How process trees are held; see `containment_choice`.
  containment_choice containment = containment_choice::automatic;
  /// The isolation of sessions whose config does not choose one
  /// (docs/security.md). `contained`: `validate` refuses the config on a
  /// host that cannot give it.
  isolation_mode isolation = isolation_mode::none;
  /// Paths that commands of contained sessions cannot read (they read as
  /// empty), e.g. the node's TLS key; the node's base directory (other
  /// sessions' directories) is always added.
  std::vector<std::string> isolation_deny;
  /// Existing host paths every contained session sees read-only, and
  /// writable, beside its own (`session_config::allow_read`,
  /// `allow_write`; docs/security.md).
  std::vector<std::string> isolation_allow_read;
  std::vector<std::string> isolation_allow_write;
  /// The host ids contained sessions take a uid and gid of their own from
  /// (one each while it lives) where the node may map them
  /// (`isolation_support::own_ids`; docs/security.md, "Identity"):
  /// [base, base + count), below 4294967294; by default
  /// `default_session_id_base` and `default_session_id_count`. Count 0:
  /// a session's root is the node's uid. Two nodes of one machine should
  /// have ranges of their own.
  uint32_t isolation_uid_base = default_session_id_base;
  uint32_t isolation_uid_count = default_session_id_count;
  /// Outside destinations (`HOST:PORT`) that commands of contained sessions
  /// may connect to when their config names none (docs/security.md).
  std::vector<std::string> allow_net;
  /// The limits of contained sessions whose config sets none. The memory
  /// and process limits need the cgroup mode with the `memory` and `pids`
  /// controllers: where the host lacks them, `validate` refuses a node
  /// whose default isolation is `contained`, and a contained session that
  /// would get them is refused (`unsupported`); 0 lifts a limit.
  isolation_limits limits = default_contained_limits();
};

/// Checks every value of `cfg`, including that the shell is an absolute
/// path to an executable regular file, and that a forced cgroup mode can
/// work (a cgroup v2 hierarchy with the node's own cgroup writable).
/// @returns `invalid_argument` naming the first bad value, e.g.
///   `invalid runtime_config.reactor_threads 0: must be at least 1`.
result<void> validate(const runtime_config& cfg);

/// What a node shares with its sessions and process actors (the reactor that
/// watches every child, the subreaper, the node's environment and
/// settings). Opaque: `embedded_node` makes one; an embedder that runs a
/// node in an actor system of its own makes one with `make_runtime` and
/// passes it to `spawn_node`.
class runtime;

/// Owned jointly by the node and every actor that uses it, so it outlives
/// the last child.
using runtime_ptr = std::shared_ptr<runtime>;

/// Makes a runtime from `cfg` as it is (the node validates it: a node
/// spawned with an invalid one answers every request with the error of
/// `validate`); an empty `temp_directory` is resolved here.
runtime_ptr make_runtime(runtime_config cfg = {});

/// For an embedder that spawned a node into an actor system of its own:
/// call once every actor of that system has ended (after
/// `caf::actor_system::await_all_actors_done`) and before the system is
/// destroyed. From then on no callback of the runtime's threads reaches an
/// actor. `embedded_node` does this itself.
void close_actor_gate(runtime& rt);

} // namespace sandbox::actors
