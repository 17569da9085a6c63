#pragma once

#include <optional>
#include <string>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "events.hpp"
#include "runtime.hpp"
#include "sandbox/actors/protocol.hpp"
#include "sandbox/contain/contained_session.hpp"
#include "sandbox/process/child_process.hpp"

namespace sandbox::actors {

/// What an execution runs and how it reports (process/execution.hpp).
struct process_params {
  runtime_ptr rt;
  /// The launched child, not yet activated; the actor owns it from now on.
  std::shared_ptr<child_process> child;
  /// Receives the output as it arrives; may be invalid.
  chunk_sink sink;
  /// Zero: no limit (§2).
  std::chrono::milliseconds timeout{0};
  /// Retained bytes per stream (§9).
  uint64_t output_cap = default_output_cap;
  /// Environment prefix that marks this child's descendants.
  std::string marker_prefix;
  /// A spawned process (its own actor's one child, which outlives the
  /// result while handles to it exist: they may still be asked to `wait`);
  /// else an execution of its session, which the session runs itself.
  bool spawned = false;
  /// Written to the child's stdin, which is then closed (execute_code).
  std::optional<std::string> initial_stdin;
  /// The session, told `exited` when a spawned process's result exists.
  /// Weak: the session holds its children, not the other way round.
  caf::actor_addr session;
  /// The session's id and the execution's number, for log lines.
  std::string session_id;
  uint64_t exec = 0;
  /// A contained session's cgroup limits and their counters when the
  /// child started: the result names a limit hit meanwhile. Null: none.
  std::shared_ptr<const session_limits> limits;
  session_limits::counters limits_before;
  /// Violations reported for the child before its owner had it (a read
  /// of a denied path right after the launch); the result carries them.
  std::vector<violation> early_violations;
};

struct process_state;

/// Behavior of a spawned process's actor: activates its child (`params`)
/// and streams its output.
process_actor_impl::behavior_type
process_behavior(process_actor_impl::stateful_pointer<process_state> self,
                 process_params params);

/// Spawns the actor of a spawned process (`params.spawned`), its only child.
process_actor_impl spawn_process(caf::actor_system& sys, process_params params);

} // namespace sandbox::actors
