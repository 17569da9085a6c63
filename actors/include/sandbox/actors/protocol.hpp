#pragma once

// The typed protocols of every sandbox actor, their atoms, message types and
// the type-ID block. Every message type has its `inspect()` right below it,
// so the same protocol crosses the network unchanged.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/type_id.hpp>
#include <caf/typed_actor.hpp>

#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"

// -- errors -------------------------------------------------------------------

CAF_ERROR_CODE_ENUM(sandbox::errc, "sandbox")

namespace sandbox {

// -- message types of the domain core ----------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, output_chunk& x) {
  return f(caf::meta::type_name("sandbox::output_chunk"), x.stream, x.data);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, exec_options& x) {
  return f(caf::meta::type_name("sandbox::exec_options"), x.timeout, x.cwd,
           x.env, x.cancel_key, x.output_cap);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, exec_result& x) {
  return f(caf::meta::type_name("sandbox::exec_result"), x.exit_code,
           x.reason, x.stdout_data, x.stderr_data, x.output_files,
           x.truncated, x.dropped_bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stop_receipt& x) {
  return f(caf::meta::type_name("sandbox::stop_receipt"), x.ended, x.killed,
           x.survivors);
}

} // namespace sandbox

namespace sandbox::actors {

/// What creates a session (R18).
struct session_config {
  std::string working_directory;
  /// Empty: `<tmpdir>/sandbox/home`.
  std::string home_directory;
  env_map env;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_config& x) {
  return f(caf::meta::type_name("sandbox::actors::session_config"),
           x.working_directory, x.home_directory, x.env);
}

/// What a session tells about itself.
struct session_info {
  std::string id;
  std::string working_directory;
  std::string home_directory;
  /// The leased TCP port; 0 when the session holds no lease.
  uint16_t port = 0;
  /// Children currently running.
  uint32_t children = 0;
  bool stopped = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_info& x) {
  return f(caf::meta::type_name("sandbox::actors::session_info"), x.id,
           x.working_directory, x.home_directory, x.port, x.children,
           x.stopped);
}

} // namespace sandbox::actors

// -- atoms --------------------------------------------------------------------

CAF_BEGIN_TYPE_ID_BLOCK(sandbox, caf::first_custom_type_id)

  CAF_ADD_TYPE_ID(sandbox, (sandbox::output_chunk))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::exec_options))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::exec_result))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::stop_receipt))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::actors::session_config))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::actors::session_info))

  CAF_ADD_ATOM(sandbox, sandbox::actors, execute_atom, "execute")
  CAF_ADD_ATOM(sandbox, sandbox::actors, code_atom, "code")
  CAF_ADD_ATOM(sandbox, sandbox::actors, spawn_atom, "spawn")
  CAF_ADD_ATOM(sandbox, sandbox::actors, cancel_atom, "cancel")
  CAF_ADD_ATOM(sandbox, sandbox::actors, stop_atom, "stop")
  CAF_ADD_ATOM(sandbox, sandbox::actors, info_atom, "info")
  CAF_ADD_ATOM(sandbox, sandbox::actors, chunk_atom, "chunk")
  CAF_ADD_ATOM(sandbox, sandbox::actors, ack_atom, "ack")
  CAF_ADD_ATOM(sandbox, sandbox::actors, stdin_atom, "stdin")
  CAF_ADD_ATOM(sandbox, sandbox::actors, close_atom, "close")
  CAF_ADD_ATOM(sandbox, sandbox::actors, kill_atom, "kill")
  CAF_ADD_ATOM(sandbox, sandbox::actors, wait_atom, "wait")
  CAF_ADD_ATOM(sandbox, sandbox::actors, pid_atom, "pid")
  CAF_ADD_ATOM(sandbox, sandbox::actors, ok_atom, "ok")
  CAF_ADD_ATOM(sandbox, sandbox::actors, create_atom, "create")
  CAF_ADD_ATOM(sandbox, sandbox::actors, list_atom, "list")
  CAF_ADD_ATOM(sandbox, sandbox::actors, files_atom, "files")
  // Internal to the process actor: events of its child on the reactor.
  CAF_ADD_ATOM(sandbox, sandbox::actors, output_atom, "output")
  CAF_ADD_ATOM(sandbox, sandbox::actors, eof_atom, "eof")
  CAF_ADD_ATOM(sandbox, sandbox::actors, exited_atom, "exited")
  CAF_ADD_ATOM(sandbox, sandbox::actors, written_atom, "written")
  CAF_ADD_ATOM(sandbox, sandbox::actors, timeout_atom, "timeout")
  CAF_ADD_ATOM(sandbox, sandbox::actors, end_atom, "end")
  CAF_ADD_ATOM(sandbox, sandbox::actors, ended_atom, "ended")

CAF_END_TYPE_ID_BLOCK(sandbox)

namespace sandbox::actors {

// -- chunk sink ---------------------------------------------------------------

/// Receives the output of an execution as it arrives. Each chunk is a
/// request; the sink answers `ack` when it is ready for more, which is the
/// backpressure that keeps memory bounded for any output size.
using chunk_sink = caf::typed_actor<
  caf::replies_to<chunk_atom, output_chunk>::with<ack_atom>>;

// -- process actor ------------------------------------------------------------

/// One child process (R10). Owns exactly one child; its destruction
/// terminates it.
using process_actor = caf::typed_actor<
  // Writes bytes to the child's stdin (only for spawned processes).
  caf::replies_to<stdin_atom, std::string>::with<ok_atom>,
  // Closes the child's stdin.
  caf::replies_to<close_atom>::with<ok_atom>,
  // Sends a signal (e.g. SIGTERM, SIGKILL) to the child's process group.
  caf::replies_to<kill_atom, int32_t>::with<ok_atom>,
  // Answers with the result once the child has exited.
  caf::replies_to<wait_atom>::with<exec_result>,
  // Answers with the child's pid.
  caf::replies_to<pid_atom>::with<int32_t>>;

/// The full interface of the process actor: the public one plus the events
/// of its child, sent from the reactor, and the orders of its session.
using process_actor_impl = process_actor::extend<
  caf::reacts_to<output_atom, int32_t, std::string>,
  caf::reacts_to<eof_atom, int32_t>,
  caf::reacts_to<exited_atom, int32_t>,
  caf::reacts_to<written_atom, uint64_t, int32_t>,
  caf::reacts_to<timeout_atom>,
  // Ends the child and its descendants with the given exit reason.
  caf::reacts_to<end_atom, exit_reason>,
  // The staged termination finished.
  caf::reacts_to<ended_atom, stop_receipt>>;

// -- filesystem worker --------------------------------------------------------

/// The filesystem worker of a session (R11–R17): every file operation of
/// the session goes through it. Relative paths resolve against the session
/// working directory.
using filesystem_actor = caf::typed_actor<
  // The session was stopped: every later request fails with
  // `session_stopped`.
  caf::replies_to<stop_atom>::with<ok_atom>>;

// -- session actor ------------------------------------------------------------

/// A session: a working directory where commands and code run (R1–R10,
/// R22). `sink` may be invalid (no streaming; the result still holds the
/// retained output).
using session_actor = caf::typed_actor<
  // R1: runs `/bin/sh -c command`; chunks go to the sink, then one result.
  caf::replies_to<execute_atom, std::string, exec_options,
                  chunk_sink>::with<exec_result>,
  // R7: runs `code` with the interpreter named `language`.
  caf::replies_to<code_atom, std::string, std::string, exec_options,
                  chunk_sink>::with<exec_result>,
  // R10: starts a live process with a stdin pipe.
  caf::replies_to<spawn_atom, std::string, exec_options,
                  chunk_sink>::with<process_actor, int32_t>,
  // R2: cancels the execution whose options carried this cancel key;
  // answers whether one was found.
  caf::replies_to<cancel_atom, std::string>::with<bool>,
  // R22: ends every child and descendant; idempotent.
  caf::replies_to<stop_atom>::with<stop_receipt>,
  caf::replies_to<info_atom>::with<session_info>,
  // The session's filesystem worker (fails with `session_stopped` after
  // stop).
  caf::replies_to<files_atom>::with<filesystem_actor>>;

/// The full interface of the session actor: the public one plus the
/// completion of its staged stop, sent from the reactor.
using session_actor_impl
  = session_actor::extend<caf::reacts_to<ended_atom, stop_receipt>>;

} // namespace sandbox::actors
