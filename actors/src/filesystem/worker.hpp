#pragma once

// The state of a filesystem worker and what every request does first and
// last: resolve its path, report a refusal (private header of
// actors/src/filesystem/).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/optional.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "events.hpp"
#include "runtime.hpp"
#include "sandbox/actors/protocol.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/fs/view.hpp"

namespace sandbox::actors::filesystem {

/// An open streamed write. The writer is shared with the file job that
/// writes to it, so that dropping the write (stop, abort, a gone owner)
/// never destroys it under a file thread; the last owner aborts it.
struct write_slot {
  std::shared_ptr<fs::atomic_writer> writer;
  /// The actor that opened the write; its termination aborts the write.
  caf::actor_addr owner;
};

/// One piece of blocking file I/O of a worker: `work` runs on a thread of
/// the runtime's file pool and touches nothing of the actor; `then` runs in
/// the worker once `work` is done (`ran`), or instead of it when the
/// session stopped before its turn came (`!ran`).
struct file_job {
  uint64_t id = 0;
  std::function<void()> work;
  std::function<void(bool ran)> then;
  /// Runs after the stop too (releasing writers).
  bool always = false;
};

/// State of one filesystem worker; owned by the worker actor alone. File
/// threads never touch it: they get a job's inputs and hand back its
/// outcome in a message.
struct filesystem_state {
  static inline const char* name = "sandbox.filesystem";

  /// The file pool (shared by every session of the node).
  runtime_ptr rt;
  /// Absolute; relative paths of requests resolve against it.
  std::string working_directory;
  /// A contained session's view (none otherwise): every path is resolved
  /// and checked in the session's mount namespace. Dropped at the stop.
  std::shared_ptr<const fs::session_view> view;
  /// The ids every job runs as (the view's; kept after the stop for the
  /// jobs that release writes).
  fs::file_ids ids;
  /// The session, told the violations (weak: it holds the worker).
  caf::actor_addr session;
  /// Set by `stop`; every later request fails with `session_stopped`.
  bool stopped = false;
  /// Open streamed writes by id.
  std::map<uint64_t, write_slot> writes;
  uint64_t next_write_id = 1;
  /// How many open writes each owner holds: an owner is monitored once,
  /// while it holds at least one.
  std::map<caf::actor_addr, size_t> owners;
  /// File jobs in request order; the front one runs when `busy`. One job at
  /// a time: the operations of a session happen in the order they were
  /// asked for, as on a thread of its own.
  std::deque<file_job> jobs;
  bool busy = false;
  uint64_t next_job = 0;
  /// What refused jobs held (a writer to commit, a chunk), released on the
  /// file pool with the next job that runs.
  std::vector<std::function<void()>> refused;
  /// Read streams and listings not yet done.
  size_t streams = 0;
};

using self_ptr = filesystem_actor_impl::stateful_pointer<filesystem_state>;

/// Resolves `path` against the working directory, or explains why the
/// request cannot run: the session is stopped or the path is unusable.
result<std::string> absolute(self_ptr self, std::string_view op,
                             const std::string& path);

/// Where a job on the file pool stores a refusal, for the worker to report
/// once the job is done.
using refusal = std::shared_ptr<fs::denial>;

/// A contained session's file operation was refused (`r` holds a path): a
/// violation of the session (kind `read_denied` or `write_denied`, detail
/// the path, execution 0: no command caused it). The one place that reports
/// it; the operation's reply is the `permission_denied` error.
void report_if_refused(self_ptr self, const refusal& r);

/// A worker whose handle went out over the network quits once it is
/// stopped and idle (see `handed_out`); a local one lives on, answering
/// `session_stopped`, until its last handle is dropped.
void maybe_quit(self_ptr self);

std::optional<std::string> to_std(const caf::optional<std::string>& x);

} // namespace sandbox::actors::filesystem
