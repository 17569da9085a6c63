#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/actors/runtime_config.hpp"
#include "sandbox/net/port_lease.hpp"

namespace sandbox::actors {

/// Runs once when a session is first created (§21), with the restricted
/// view of it, on a detached actor of its own: it may block, e.g. make
/// requests to the view with a `caf::scoped_actor` of the given system (the
/// blocking facade needs the full session, which the hook does not get). A
/// non-empty error stops the session and reaches the creator.
using first_create_hook
  = std::function<caf::error(caf::actor_system&, restricted_session)>;

/// How the actor system of a node schedules its actors (CAF's scheduler).
enum class scheduler_policy {
  /// Workers share one queue; an idle worker sleeps on a condition variable
  /// until work arrives (CAF's `work_sharing`).
  sharing,
  /// CAF's own default: each worker has a queue and steals from the others;
  /// an idle worker polls for work between short sleeps (CPU even when idle).
  stealing,
  /// The default: as `sharing`, and an actor that a worker's actor sends a
  /// message to runs next on that worker instead of waking another one (at
  /// most 3 in a row; then the worker takes the shared queue's first job).
  /// A node's actors exchange a message per step of an execution, and the
  /// step's receiver is usually idle.
  handoff,
};

/// The largest `scheduler_config::threads`.
inline constexpr size_t max_scheduler_threads = 256;

/// The scheduler of the actor system that hosts a node: applied by
/// `embedded_node`, and by `configure_scheduler` for an embedder that makes
/// its own actor system (docs/benchmarks.md, "The scheduler", has the
/// measurements behind the defaults).
struct scheduler_config {
  scheduler_policy policy = scheduler_policy::handoff;
  /// Worker threads, 1 to `max_scheduler_threads`; 0: one per core (CAF's
  /// own default is at least 4, which on a small machine only adds wake-ups).
  size_t threads = 0;
};

/// Sets `cfg`'s scheduler keys (`scheduler.policy`, `scheduler.max-threads`)
/// from `sched`, and for `handoff` adds the node's scheduler module to
/// `cfg.module_factories` (CAF has no such policy of its own); call before
/// the actor system is made. A later call replaces an earlier one's choice.
/// A `threads` value out of range is left to `validate(node_config)` to
/// report: the keys then keep their defaults.
void configure_scheduler(caf::actor_system_config& cfg,
                         const scheduler_config& sched);

/// Settings of a node (the provider). `validate` says whether a node can
/// work with them.
struct node_config {
  /// Where sessions created without a working directory live:
  /// `<base_directory>/<session id>`. Empty: the current directory.
  std::string base_directory;
  /// The range of TCP ports leased to sessions, one each (§18); both
  /// inclusive, `1 <= first_port <= last_port`.
  uint16_t first_port = default_first_leased_port;
  uint16_t last_port = default_last_leased_port;
  first_create_hook on_first_create;
  /// How long the sessions of a client whose owner actor went down (its
  /// connection dropped) live on before the node stops them; detached
  /// sessions are never stopped that way. Not negative.
  std::chrono::milliseconds client_grace{30000};
  /// The scheduler of the node's actor system; used where the node makes
  /// that system (`embedded_node`, `sandbox serve`).
  scheduler_config scheduler;
  /// Client identities that see, use and stop every session of the node.
  /// Any other client sees only the sessions it created; another's session
  /// is `session_not_found` to it. A client's identity is the subject of
  /// its TLS certificate (RFC 2253, e.g. `CN=operator,O=example`), else
  /// `uid:N` for a loopback connection of uid N; callers in the node's own
  /// process are `local`, which is always an admin.
  std::vector<std::string> admins;
};

/// Checks every value of `cfg`.
/// @returns `invalid_argument` naming the first bad value, e.g.
///   `node_config: invalid port range 50000-40000: ...`.
result<void> validate(const node_config& cfg);

/// What plain C++ code needs of a node, in-process (`embedded_node`) or
/// remote (`remote_node`): its actor system and node actor, and the node's
/// session lifecycle. `blocking_session::create` takes either.
class basic_node {
public:
  virtual ~basic_node();

  /// The actor system the node actor is reached through.
  virtual caf::actor_system& system() noexcept = 0;

  /// The node actor (a proxy for a remote node).
  virtual const node_actor& node() const noexcept = 0;

  /// Every live session with its directories, port and child count.
  result<std::vector<session_info>> list();

  /// Stops the session `id` (§22); `session_not_found` if unknown.
  result<stop_receipt> stop_session(const std::string& id);

  /// Stops every session; returns how many there were.
  result<uint32_t> stop_all();
};

/// Spawns a node actor sharing `rt` with its sessions. When `validate`
/// fails for `rt->config()` or `cfg`, the node does not die: it answers
/// every request with that `invalid_argument` error.
node_actor spawn_node(caf::actor_system& sys, runtime_ptr rt, node_config cfg);

} // namespace sandbox::actors
