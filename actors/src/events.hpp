#pragma once

// The full interfaces of the node's actors (private): the public ones of
// sandbox/actors/protocol.hpp plus the events that the reactor, the file
// pool and the actors themselves send.

#include <string>
#include <vector>

#include "sandbox/actors/protocol.hpp"

namespace sandbox::actors {

/// The full interface of the process actor: the public one plus the events
/// of its child, sent from the reactor, and the orders of its session.
using process_actor_impl = process_actor::extend<
  // The events of its execution (see `execution_events`).
  caf::reacts_to<output_atom, uint64_t, int32_t, std::string>,
  caf::reacts_to<exited_atom, uint64_t, int32_t, caf::error, exec_result>,
  caf::reacts_to<timeout_atom, uint64_t>,
  caf::reacts_to<ended_atom, uint64_t, stop_receipt>,
  caf::reacts_to<written_atom, uint64_t, int32_t>,
  // Ends the child and its descendants with the given exit reason.
  caf::reacts_to<end_atom, exit_reason>,
  // Violations of the child's processes, seen while it runs.
  caf::reacts_to<violations_atom, std::vector<violation>>>;

/// The full interface of the filesystem worker: the public one plus the
/// order of its session, which only the session holds, and the end of one
/// of its file jobs on the node's file pool.
using filesystem_actor_impl = filesystem_actor::extend<
  // The session was stopped: every later request fails with
  // `session_stopped`.
  caf::replies_to<stop_atom>::with<ok_atom>,
  // The file job with this number is done.
  caf::reacts_to<ended_atom, uint64_t>>;

/// The full interface of the session actor: the public one plus the
/// completion of its staged stop, sent from the reactor, and the news from
/// one of its process actors (the sender) that its child has finished.
using session_actor_impl = session_actor::extend<
  // The events of an execution, each with its number: a read of its
  // stream (when streamed), its end (the child's status, or the error that
  // it could not be collected: waitpid failed, once both streams ended;
  // for an execution nobody streams, with the output the reactor kept in
  // the result's data fields), its timeout, the end of its sweep after a
  // timeout or cancel (process/execution.hpp).
  caf::reacts_to<output_atom, uint64_t, int32_t, std::string>,
  caf::reacts_to<exited_atom, uint64_t, int32_t, caf::error, exec_result>,
  caf::reacts_to<timeout_atom, uint64_t>,
  caf::reacts_to<ended_atom, uint64_t, stop_receipt>,
  // The session's sweep finished; one of its spawned processes has its
  // result.
  caf::reacts_to<ended_atom, stop_receipt>, caf::reacts_to<exited_atom>,
  // Its long-lived process `N` (p-N) has exited.
  caf::reacts_to<exited_atom, uint64_t>,
  // A read or a wait told someone of the end of process `N`.
  caf::reacts_to<read_atom, uint64_t>,
  // Violations seen by one of its process actors
  // or its filesystem worker.
  caf::reacts_to<violations_atom, std::vector<violation>>>;

/// The full interface of the node actor: the public one plus the outcome of
/// an `on_first_create` hook, run off the node's thread.
using node_actor_impl
  = node_actor::extend<caf::reacts_to<hooked_atom, std::string, caf::error>,
                       // The grace period of the gone client `n` ended.
                       caf::reacts_to<grace_atom, uint64_t>,
                       // The lookup `n` of an allow list (off the node's
                       // thread) is done.
                       caf::reacts_to<resolved_atom, uint64_t>,
                       // The session with this id completed its stop
                       // (through its own handle or the node's).
                       caf::reacts_to<ended_atom, std::string>>;

} // namespace sandbox::actors
