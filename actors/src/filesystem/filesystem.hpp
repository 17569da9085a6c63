#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>

#include "events.hpp"
#include "runtime.hpp"
#include "sandbox/actors/protocol.hpp"

namespace sandbox::fs {
class session_view;
} // namespace sandbox::fs

namespace sandbox::actors {

/// Chunk size of a read stream whose request asks for 0 bytes.
constexpr size_t default_read_chunk = 256 * 1024;

/// Most frames in one batch of a listing (§16).
constexpr size_t max_list_batch = 256;

/// Spawns the filesystem worker of a session whose working directory is
/// `working_directory` (absolute).
///
/// File I/O never blocks the session actor or the scheduler's threads: the
/// worker is an actor that hands each blocking operation to the file pool
/// of `rt` (`runtime_config::file_threads` threads shared by every session
/// of the node) and gets its outcome back as a message. A worker runs one
/// operation at a time, in the order of the requests. Streams and listings
/// advance one chunk or batch per acknowledgement, so several of them
/// interleave on one worker and none buffers more than one chunk or batch.
/// Open writes are aborted when the actor that opened them terminates, when
/// the session stops, and when the worker goes away.
///
/// With `view` (a contained session), every path is resolved and checked
/// in the session's own view (`fs::session_view`): the worker sees and may
/// change exactly what a command of the session sees and may change; each
/// refusal goes to `session` as a violation.
filesystem_actor_impl
spawn_filesystem(caf::actor_system& sys, runtime_ptr rt,
                 std::string working_directory,
                 std::shared_ptr<const fs::session_view> view = nullptr,
                 caf::actor_addr session = {});

} // namespace sandbox::actors
