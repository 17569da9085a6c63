#pragma once

// The typed protocols of every sandbox actor, their atoms, message types and
// the type-ID block. Every message type has its `inspect()` right below it,
// so the same protocol crosses the network unchanged.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>
#include <caf/replies_to.hpp>
#include <caf/type_id.hpp>
#include <caf/typed_actor.hpp>

#include "sandbox/contain/isolation.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"
#include "sandbox/fs/listing.hpp"
#include "sandbox/fs/stat.hpp"

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
typename Inspector::result_type inspect(Inspector& f, violation& x) {
  return f(caf::meta::type_name("sandbox::violation"), x.kind, x.execution,
           x.detail);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, exec_result& x) {
  return f(caf::meta::type_name("sandbox::exec_result"), x.exit_code, x.reason,
           x.stdout_data, x.stderr_data, x.output_files, x.truncated,
           x.dropped_bytes, x.violations, x.violations_dropped, x.ended_by);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, isolation_limits& x) {
  return f(caf::meta::type_name("sandbox::isolation_limits"), x.cpu_seconds,
           x.file_size, x.open_files, x.memory, x.processes, x.max_connections,
           x.tmp_size);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stop_receipt& x) {
  return f(caf::meta::type_name("sandbox::stop_receipt"), x.ended, x.killed,
           x.survivors, x.mode);
}

} // namespace sandbox

namespace sandbox::actors {

/// What creates a session (§18).
struct session_config {
  std::string working_directory;
  /// Empty: `<tmpdir>/sandbox-<euid>/home`, private to the user and
  /// created at the first execution (see `runtime_config::temp_directory`).
  std::string home_directory;
  env_map env;
  /// The client that asks for the session, an actor that lives as long as
  /// the client (see `client_owner`). When it goes down (its connection
  /// dropped), the node stops the session after its client grace period,
  /// unless `detached`. Invalid: nobody to watch (in-process callers).
  caf::actor owner;
  /// The session outlives its creator: only a `stop` ends it.
  bool detached = false;
  /// `none` or `contained` (docs/security.md); unset: the node's default
  /// (`runtime_config::isolation`). A contained session the host cannot
  /// fully give is refused (`unsupported`, naming what is missing).
  caf::optional<isolation_mode> isolation;
  /// Limits of a contained session (ignored by `none`); unset: the node's
  /// (`runtime_config::limits`). Set, they replace the node's as a whole.
  caf::optional<isolation_limits> limits;
  /// Outside destinations (`HOST:PORT`) commands of a contained session may
  /// connect to (docs/security.md); unset: the node's default
  /// (`runtime_config::allow_net`). A `none` session must leave it unset
  /// or empty.
  caf::optional<std::vector<std::string>> allow_net;
  /// Existing host paths a contained session's commands may read, shown in
  /// its view read-only at the same path (docs/security.md), beside the
  /// node's `runtime_config::isolation_allow_read`. A `none` session must
  /// leave it empty.
  std::vector<std::string> allow_read;
  /// Existing host paths a contained session's commands may write, like
  /// the working directory, beside the node's
  /// `runtime_config::isolation_allow_write`. A `none` session must leave it
  /// empty.
  std::vector<std::string> allow_write;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_config& x) {
  return f(caf::meta::type_name("sandbox::actors::session_config"),
           x.working_directory, x.home_directory, x.env, x.owner, x.detached,
           x.isolation, x.limits, x.allow_net, x.allow_read, x.allow_write);
}

/// What a session tells about itself.
struct session_info {
  std::string id;
  std::string working_directory;
  std::string home_directory;
  /// The leased TCP port; 0 when the session holds no lease.
  uint16_t port = 0;
  /// Direct children still running: executions under way and spawned
  /// processes (not the background jobs an execution left behind).
  uint32_t children = 0;
  bool stopped = false;
  /// How the node holds the session's processes.
  containment_mode containment = containment_mode::process_group;
  isolation_mode isolation = isolation_mode::none;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, session_info& x) {
  return f(caf::meta::type_name("sandbox::actors::session_info"), x.id,
           x.working_directory, x.home_directory, x.port, x.children, x.stopped,
           x.containment, x.isolation);
}

// -- long-lived processes (docs/processes.md) ---------------------------------

/// Output a process keeps when its options name no retention: the last
/// 1 MiB.
constexpr uint64_t default_process_retain = uint64_t{1} << 20;

/// The most output one process may keep (64 MiB).
constexpr uint64_t max_process_retain = uint64_t{64} << 20;

/// Exited processes a session keeps listed; beyond, the oldest go first.
constexpr size_t max_exited_processes = 64;

/// The longest a read or a wait of a process may wait for (5 minutes).
constexpr uint32_t max_process_wait_ms = 300000;

/// How a long-lived process starts.
struct process_options {
  /// Its working directory and environment (as an execution's); a
  /// `timeout` other than 0 ends it after that long; `cancel_key` and
  /// `output_cap` are not used.
  exec_options exec;
  /// Its stdin is open for writes (`stdin_atom`) until closed; otherwise
  /// it reads end of file at once.
  bool open_stdin = false;
  /// Bytes of output it keeps (the newest); 0: `default_process_retain`.
  /// At most `max_process_retain`.
  uint64_t retain = 0;
  /// It runs on a pseudo-terminal of `rows` x `cols` (1 to
  /// `max_terminal_side` each): the leader of a new session with the
  /// terminal as its controlling terminal, its output one stream
  /// (`stream_kind::pty`), its stdin always open (`open_stdin` is
  /// ignored), `TERM=xterm-256color` unless the session's or the call's
  /// environment sets `TERM`.
  bool tty = false;
  uint16_t rows = 24;
  uint16_t cols = 80;
};

/// The most rows or columns a terminal may have.
constexpr uint16_t max_terminal_side = 10000;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_options& x) {
  return f(caf::meta::type_name("sandbox::actors::process_options"), x.exec,
           x.open_stdin, x.retain, x.tty, x.rows, x.cols);
}

/// What a session tells about one of its processes.
struct process_info {
  /// `p-N`: N counts up per session from 1.
  std::string id;
  std::string command;
  /// Its pid as the node sees it.
  int32_t pid = 0;
  bool running = true;
  bool stdin_open = false;
  /// It runs on a terminal (`process_options::tty`).
  bool tty = false;
  /// Once it has exited: its status, as an execution's.
  int32_t exit_code = 0;
  exit_reason reason = exit_reason::exited;
  /// Offset just past its last byte of output.
  uint64_t next_offset = 0;
  /// Offset of the oldest byte of output still kept.
  uint64_t retained_from = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_info& x) {
  return f(caf::meta::type_name("sandbox::actors::process_info"), x.id,
           x.command, x.pid, x.running, x.stdin_open, x.tty, x.exit_code,
           x.reason, x.next_offset, x.retained_from);
}

/// The answer to a read of a process's output.
struct process_output {
  /// The bytes, in the order written, each chunk of one stream.
  std::vector<output_chunk> chunks;
  /// Offset of the first byte returned.
  uint64_t offset = 0;
  /// Offset just past the last byte returned: where the next read starts.
  uint64_t next_offset = 0;
  /// Bytes between the offset asked and `offset` that are no longer kept.
  uint64_t gap = 0;
  /// Whether the process still ran when the read was answered; when not,
  /// its status.
  bool running = true;
  int32_t exit_code = 0;
  exit_reason reason = exit_reason::exited;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, process_output& x) {
  return f(caf::meta::type_name("sandbox::actors::process_output"), x.chunks,
           x.offset, x.next_offset, x.gap, x.running, x.exit_code, x.reason);
}

} // namespace sandbox::actors

// -- message types of the filesystem worker ----------------------------------

namespace sandbox::fs {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_stat& x) {
  return f(caf::meta::type_name("sandbox::fs::file_stat"), x.kind, x.size,
           x.mtime_ns, x.dev, x.ino, x.version);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dir_entry& x) {
  return f(caf::meta::type_name("sandbox::fs::dir_entry"), x.name,
           x.has_metadata, x.is_dir, x.size);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, frame& x) {
  return f(caf::meta::type_name("sandbox::fs::frame"), x.path, x.name, x.kind,
           x.size);
}

} // namespace sandbox::fs

namespace sandbox::actors {

/// Options of a write (§13).
struct write_options {
  /// Compare-and-swap: when set, the write happens only if the file's
  /// current `stat` version equals this token, else it fails with `conflict`
  /// and the file stays untouched. An empty token means "the file must not
  /// exist yet".
  caf::optional<std::string> if_version;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_options& x) {
  return f(caf::meta::type_name("sandbox::actors::write_options"),
           x.if_version);
}

/// The done frame of a listing (§16): exactly one ends every listing, also
/// after an error or a cancellation.
struct list_done {
  /// Frames delivered in acknowledged batches before the end.
  uint64_t count = 0;
  /// Why the listing ended early (a `sandbox` error); none for a listing
  /// that reached its end.
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, list_done& x) {
  return f(caf::meta::type_name("sandbox::actors::list_done"), x.count,
           x.error);
}

} // namespace sandbox::actors

// -- atoms --------------------------------------------------------------------

// clang-format off: it would put a space into "(std::vector<T>))".
CAF_BEGIN_TYPE_ID_BLOCK(sandbox, caf::first_custom_type_id)

  CAF_ADD_TYPE_ID(sandbox, (sandbox::output_chunk))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::exec_options))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::exec_result))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::stop_receipt))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::actors::session_config))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::actors::session_info))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::violation))
  CAF_ADD_TYPE_ID(sandbox, (std::vector<sandbox::violation>) )
  CAF_ADD_ATOM(sandbox, sandbox::actors, violations_atom, "violations")

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
  CAF_ADD_ATOM(sandbox, sandbox::actors, get_atom, "get")
  CAF_ADD_ATOM(sandbox, sandbox::actors, resume_atom, "resume")
  CAF_ADD_ATOM(sandbox, sandbox::actors, hooked_atom, "hooked")
  // Internal to the process actor: events of its child on the reactor.
  CAF_ADD_ATOM(sandbox, sandbox::actors, output_atom, "output")
  CAF_ADD_ATOM(sandbox, sandbox::actors, exited_atom, "exited")
  CAF_ADD_ATOM(sandbox, sandbox::actors, written_atom, "written")
  CAF_ADD_ATOM(sandbox, sandbox::actors, timeout_atom, "timeout")
  CAF_ADD_ATOM(sandbox, sandbox::actors, start_atom, "start")
  CAF_ADD_ATOM(sandbox, sandbox::actors, end_atom, "end")
  CAF_ADD_ATOM(sandbox, sandbox::actors, ended_atom, "ended")

  // The filesystem worker (§11-§17).
  CAF_ADD_TYPE_ID(sandbox, (sandbox::fs::file_stat))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::fs::dir_entry))
  CAF_ADD_TYPE_ID(sandbox, (std::vector<sandbox::fs::dir_entry>) )
  CAF_ADD_TYPE_ID(sandbox, (sandbox::fs::frame))
  CAF_ADD_TYPE_ID(sandbox, (std::vector<sandbox::fs::frame>) )
  CAF_ADD_TYPE_ID(sandbox, (sandbox::actors::write_options))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::actors::list_done))
  CAF_ADD_ATOM(sandbox, sandbox::actors, read_atom, "read")
  CAF_ADD_ATOM(sandbox, sandbox::actors, read_text_atom, "read_text")
  CAF_ADD_ATOM(sandbox, sandbox::actors, read_stream_atom, "read_strm")
  CAF_ADD_ATOM(sandbox, sandbox::actors, write_atom, "write")
  CAF_ADD_ATOM(sandbox, sandbox::actors, open_write_atom, "open_write")
  CAF_ADD_ATOM(sandbox, sandbox::actors, commit_atom, "commit")
  CAF_ADD_ATOM(sandbox, sandbox::actors, abort_atom, "abort")
  CAF_ADD_ATOM(sandbox, sandbox::actors, remove_atom, "remove")
  CAF_ADD_ATOM(sandbox, sandbox::actors, list_files_atom, "list_files")
  CAF_ADD_ATOM(sandbox, sandbox::actors, stat_atom, "stat")
  CAF_ADD_ATOM(sandbox, sandbox::actors, frames_atom, "frames")

  // The node: the grace period of a gone client ended.
  CAF_ADD_ATOM(sandbox, sandbox::actors, grace_atom, "grace")
  // The node: the allow list of a session to create was looked up.
  CAF_ADD_ATOM(sandbox, sandbox::actors, resolved_atom, "resolved")

  // Long-lived processes (docs/processes.md).
  CAF_ADD_TYPE_ID(sandbox, (sandbox::actors::process_options))
  CAF_ADD_TYPE_ID(sandbox, (sandbox::actors::process_info))
  CAF_ADD_TYPE_ID(sandbox, (std::vector<sandbox::actors::process_info>) )
  CAF_ADD_TYPE_ID(sandbox, (sandbox::actors::process_output))
  CAF_ADD_TYPE_ID(sandbox, (std::vector<sandbox::output_chunk>) )
  CAF_ADD_ATOM(sandbox, sandbox::actors, proc_start_atom, "proc_start")
  CAF_ADD_ATOM(sandbox, sandbox::actors, proc_read_atom, "proc_read")
  CAF_ADD_ATOM(sandbox, sandbox::actors, proc_list_atom, "proc_list")
  CAF_ADD_ATOM(sandbox, sandbox::actors, resize_atom, "resize")

CAF_END_TYPE_ID_BLOCK(sandbox)
// clang-format on

namespace sandbox::actors {

// -- chunk sink ---------------------------------------------------------------

/// Receives the output of an execution as it arrives. Each chunk is a
/// request; the sink answers `ack` when it is ready for more, which is the
/// backpressure that keeps memory bounded for any output size.
using chunk_sink
  = caf::typed_actor<caf::replies_to<chunk_atom, output_chunk>::with<ack_atom>>;

// -- process actor ------------------------------------------------------------

/// One child process (§10). Owns exactly one child; its destruction
/// terminates it.
using process_actor = caf::typed_actor<
  // Writes bytes to the child's stdin (only for spawned processes).
  caf::replies_to<stdin_atom, std::string>::with<ok_atom>,
  // Closes the child's stdin.
  caf::replies_to<close_atom>::with<ok_atom>,
  // Sends a signal (e.g. SIGTERM, SIGKILL) to the child's process group
  // and, in the cgroup mode, to every process of its cgroup.
  caf::replies_to<kill_atom, int32_t>::with<ok_atom>,
  // Sets the size (rows, columns) of the child's terminal; the terminal's
  // foreground group gets SIGWINCH. `invalid_argument` without one.
  caf::replies_to<resize_atom, uint16_t, uint16_t>::with<ok_atom>,
  // Answers with the result once the child has exited.
  caf::replies_to<wait_atom>::with<exec_result>,
  // Answers with the child's pid.
  caf::replies_to<pid_atom>::with<int32_t>>;

// -- filesystem worker --------------------------------------------------------

/// Receives the bytes of a read stream (§12). Each chunk is a request; the
/// sink answers `ack` when it is ready for the next one (one chunk is in
/// flight at a time), or an error to cancel the stream.
using byte_sink
  = caf::typed_actor<caf::replies_to<chunk_atom, std::string>::with<ack_atom>>;

/// Receives the frames of a listing (§16) in batches. Each batch is a
/// request; the worker reads no further until the sink answers `ack` (one
/// batch in flight), so a slow sink never makes the worker buffer the tree.
/// Answering an error cancels the listing.
using frame_sink = caf::typed_actor<
  caf::replies_to<frames_atom, std::vector<fs::frame>>::with<ack_atom>>;

/// The filesystem worker of a session (§11–§17): every file operation of
/// the session goes through it. Relative paths resolve against the session
/// working directory. Failures are `sandbox` errors (`caf::make_error(errc,
/// message)`); after the session stopped, every request fails with
/// `session_stopped`.
using filesystem_actor = caf::typed_actor<
  // §11: the whole content of a regular file.
  caf::replies_to<read_atom, std::string>::with<std::string>,
  // §11: lines start..end of a file (1-based, inclusive; end 0: to the end).
  caf::replies_to<read_text_atom, std::string, uint64_t,
                  uint64_t>::with<std::string>,
  // §12: a fresh stream of chunks of at most `chunk_size` bytes (0: 256 KiB,
  // at most 1 MiB) to the sink; the reply is the done: total bytes sent.
  caf::replies_to<read_stream_atom, std::string, uint32_t,
                  byte_sink>::with<uint64_t>,
  // §13: writes `bytes` atomically (parents created, temp file + rename).
  caf::replies_to<write_atom, std::string, std::string,
                  write_options>::with<ok_atom>,
  // §13: opens a streamed atomic write of a path; answers its write id.
  // The write is aborted when the actor that opened it terminates.
  caf::replies_to<open_write_atom, std::string, write_options>::with<uint64_t>,
  // Appends a chunk to an open write; the reply is the ack.
  caf::replies_to<write_atom, uint64_t, std::string>::with<ack_atom>,
  // Renames the written file over the target (if_version checked again).
  caf::replies_to<commit_atom, uint64_t>::with<ok_atom>,
  // Drops an open write; the target stays as it was. Idempotent.
  caf::replies_to<abort_atom, uint64_t>::with<ok_atom>,
  // §14: removes a file or symlink.
  caf::replies_to<remove_atom, std::string>::with<ok_atom>,
  // §15: the entries of a directory, sorted by name in byte order.
  caf::replies_to<list_files_atom,
                  std::string>::with<std::vector<fs::dir_entry>>,
  // §16: frames of the tree below a path, `max_depth` levels deep, in
  // batches to the sink; the reply is the one done frame (never an error).
  caf::replies_to<list_atom, std::string, uint32_t,
                  frame_sink>::with<list_done>,
  // §17: metadata and version token of the path itself (lstat).
  caf::replies_to<stat_atom, std::string>::with<fs::file_stat>>;

// -- session actor ------------------------------------------------------------

/// A session without lifecycle and port members (§20): what an
/// `on_first_create` hook or an untrusted helper gets. The full session
/// interface extends it, so a view is the same actor and shares the
/// session's process tracking: `stop` also ends what the view started.
/// `sink` may be invalid (no streaming; the result still holds the retained
/// output).
using restricted_session = caf::typed_actor<
  // §1: runs `/bin/sh -c command`; chunks go to the sink, then one result.
  caf::replies_to<execute_atom, std::string, exec_options,
                  chunk_sink>::with<exec_result>,
  // §7: runs `code` with the interpreter named `language`.
  caf::replies_to<code_atom, std::string, std::string, exec_options,
                  chunk_sink>::with<exec_result>,
  // §10: starts a live process with a stdin pipe.
  caf::replies_to<spawn_atom, std::string, exec_options,
                  chunk_sink>::with<process_actor, int32_t>,
  // Long-lived processes (docs/processes.md), named by their id `p-N`.
  // Starts one; answers at once.
  caf::replies_to<proc_start_atom, std::string,
                  process_options>::with<process_info>,
  // Its output from an offset: up to `max` bytes (third argument), waiting
  // up to the milliseconds of the second (at most `max_process_wait_ms`)
  // for a first byte when none is there yet and it still runs.
  caf::replies_to<proc_read_atom, std::string, uint64_t, uint32_t,
                  uint64_t>::with<process_output>,
  // Writes to its stdin (in order); closes its stdin.
  caf::replies_to<stdin_atom, std::string, std::string>::with<ok_atom>,
  caf::replies_to<close_atom, std::string>::with<ok_atom>,
  // Signals its process tree (its group, and its cgroup's processes).
  caf::replies_to<kill_atom, std::string, int32_t>::with<ok_atom>,
  // Sets the size (rows, columns) of its terminal.
  caf::replies_to<resize_atom, std::string, uint16_t, uint16_t>::with<ok_atom>,
  // Waits up to the milliseconds given for it to end; answers its info.
  caf::replies_to<wait_atom, std::string, uint32_t>::with<process_info>,
  // The session's processes, running and exited, oldest first.
  caf::replies_to<proc_list_atom>::with<std::vector<process_info>>,
  // §2: cancels the running execution whose options carried this cancel
  // key (a running execution holds a key alone); answers whether one was
  // running.
  caf::replies_to<cancel_atom, std::string>::with<bool>,
  // The session's filesystem worker (fails with `session_stopped` after
  // stop).
  caf::replies_to<files_atom>::with<filesystem_actor>>;

/// A session: a working directory where commands and code run (§1–§10,
/// §22), plus its lifecycle.
using session_actor = restricted_session::extend<
  // §22: ends every child and descendant; idempotent.
  caf::replies_to<stop_atom>::with<stop_receipt>,
  caf::replies_to<info_atom>::with<session_info>,
  // What the session's executions and file operations were refused or hit
  // (contained sessions), oldest first, at most `max_session_violations`.
  caf::replies_to<violations_atom>::with<std::vector<violation>>>;

/// Violations a session keeps (the oldest are dropped first).
constexpr size_t max_session_violations = 1024;

/// Returns the restricted view of `s` (§20).
inline restricted_session restricted(const session_actor& s) {
  return s;
}

// -- node actor ---------------------------------------------------------------

/// The provider: creates sessions (§18), leases their ports, lists them and
/// stops them; a node that shuts down stops every session.
using node_actor = caf::typed_actor<
  // §18: creates a session; §21: runs the `on_first_create` hook first.
  caf::replies_to<create_atom, session_config>::with<session_actor,
                                                     session_info>,
  // Looks a session up by id (`session_not_found` otherwise).
  caf::replies_to<get_atom, std::string>::with<session_actor>,
  // §21: resuming a session is `unsupported`.
  caf::replies_to<resume_atom, std::string>::with<session_actor>,
  caf::replies_to<list_atom>::with<std::vector<session_info>>,
  // §22: stops one session; `session_not_found` for an unknown or already
  // stopped id.
  caf::replies_to<stop_atom, std::string>::with<stop_receipt>,
  // Stops every session (node shutdown); answers how many were stopped.
  caf::replies_to<stop_atom>::with<uint32_t>>;

} // namespace sandbox::actors
