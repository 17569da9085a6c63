#pragma once

// Streamed writes of a filesystem worker: open, chunks, commit or abort; a
// write ends with the actor that opened it (private header of
// actors/src/filesystem/).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "filesystem/worker.hpp"
#include "sandbox/actors/protocol.hpp"
#include "sandbox/fs/file_io.hpp"

namespace sandbox::actors::filesystem {

/// Opens a streamed write of `path` for the sender; answers its id.
caf::result<uint64_t> on_open_write(self_ptr self, const std::string& path,
                                    const write_options& opts);

/// Appends `chunk` to the open write `id`; a failed chunk ends the write.
caf::result<ack_atom> on_write_chunk(self_ptr self, uint64_t id,
                                     std::string& chunk);

/// Replaces the target of the open write `id` with what it wrote.
caf::result<ok_atom> on_commit(self_ptr self, uint64_t id);

/// Drops the open write `id` (a write that is gone already is fine).
caf::result<ok_atom> on_abort(self_ptr self, uint64_t id);

/// The opener of writes went away: nobody can finish its writes.
void on_owner_down(self_ptr self, const caf::down_msg& msg);

/// Forgets every open write and its opener (the stop): returns their
/// writers, for the caller to release on the file pool.
std::vector<std::shared_ptr<fs::atomic_writer>> take_writes(self_ptr self);

} // namespace sandbox::actors::filesystem
