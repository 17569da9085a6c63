#pragma once

// Read streams and listings of a filesystem worker: one chunk or batch per
// acknowledgement of the sink (private header of actors/src/filesystem/).

#include <cstdint>
#include <string>

#include "filesystem/worker.hpp"
#include "sandbox/actors/protocol.hpp"

namespace sandbox::actors::filesystem {

/// §12: streams the file `path` to `sink` in chunks of `chunk_size` bytes
/// (`default_read_chunk` for 0); answers the total once the sink acked the
/// last chunk, or the error that ended the stream.
caf::result<uint64_t> on_read_stream(self_ptr self, const std::string& path,
                                     uint32_t chunk_size, byte_sink& sink);

/// §16: walks the tree at `path` down to `max_depth`, sending batches of
/// frames to `sink`; every outcome is one done frame, errors included.
caf::result<list_done> on_list(self_ptr self, const std::string& path,
                               uint32_t max_depth, frame_sink& sink);

} // namespace sandbox::actors::filesystem
