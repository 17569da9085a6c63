#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/scoped_actor.hpp>

// The facade starts from a session: `files_of(blocking_session&)`.
#include "sandbox/actors/protocol.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/fs/listing.hpp"
#include "sandbox/fs/stat.hpp"

namespace sandbox::actors {

/// Called with each chunk of a read stream, in the caller's thread; returns
/// false to cancel the stream.
using byte_callback = std::function<bool(const std::string&)>;

/// Called with each frame of a listing, in the caller's thread; returns
/// false to cancel the listing.
using frame_callback = std::function<bool(const fs::frame&)>;

/// The done frame of a listing (§16), for plain C++: exactly one per call.
struct list_summary {
  /// Frames in batches the caller acknowledged (a batch cancelled midway
  /// does not count).
  uint64_t count = 0;
  /// Why the listing ended early; empty when it reached its end.
  std::optional<sandbox::error> error;
};

/// A streamed atomic write in progress (§13), opened by
/// `blocking_files::open_write`. Memory holds one chunk at a time: each
/// `write` waits for the worker's ack. Move-only; destroying an uncommitted
/// writer aborts the write (the target stays as it was).
class blocking_writer {
public:
  blocking_writer(std::unique_ptr<caf::scoped_actor> self,
                  filesystem_actor handle, uint64_t id);
  blocking_writer(blocking_writer&&) noexcept;
  blocking_writer& operator=(blocking_writer&&) noexcept;
  ~blocking_writer();

  /// The write id on the worker.
  uint64_t id() const noexcept {
    return id_;
  }

  /// Bytes written so far.
  uint64_t bytes() const noexcept {
    return bytes_;
  }

  /// Appends `chunk` to the temporary file; returns once it is written.
  ///
  /// Errors: `io_error` (e.g. disk full; the write is then dropped),
  /// `invalid_argument` (already finished), `session_stopped`.
  result<void> write(std::string chunk);

  /// Renames the temporary file over the target.
  ///
  /// Errors: `conflict` (the if_version no longer matches; the target is
  /// untouched), `not_a_regular_file`, `io_error`, `session_stopped`,
  /// `invalid_argument` (already committed or aborted). After a failed
  /// `write` (the write is then dropped) it fails with that write's error
  /// code, `session_stopped` included.
  result<void> commit();

  /// Drops the write; the target stays as it was. Idempotent.
  void abort() noexcept;

private:
  sandbox::error finished_error() const;

  // The actor that opened the write: the worker aborts the write when it
  // terminates, so it lives exactly as long as this writer.
  std::unique_ptr<caf::scoped_actor> self_;
  filesystem_actor handle_;
  uint64_t id_ = 0;
  uint64_t bytes_ = 0;
  bool finished_ = true;
  /// Why the write ended early (a failed `write`), for later calls.
  std::optional<sandbox::error> failure_;
};

/// The blocking facade of a session's filesystem worker (§11–§17): the
/// actor messages, called from plain C++ (never a second implementation).
/// Relative paths resolve against the session working directory. After the
/// session stopped, every call fails with `session_stopped`.
class blocking_files {
public:
  blocking_files(caf::actor_system& sys, filesystem_actor handle)
    : sys_(&sys), handle_(std::move(handle)) {
  }

  const filesystem_actor& handle() const noexcept {
    return handle_;
  }

  /// §11: the whole file. Errors: `path_not_found`, `not_a_regular_file`
  /// (directory, FIFO, socket, device; never a hang), `permission_denied`,
  /// `invalid_argument`, `io_error`.
  result<std::string> read_file(const std::string& path);

  /// §11: lines `start_line` to `end_line` (1-based, inclusive; 0 as the
  /// end reads to the end of the file). Errors: those of `read_file`, and
  /// `invalid_argument` for a bad range.
  result<std::string> read_text(const std::string& path, uint64_t start_line,
                                uint64_t end_line = 0);

  /// §12: streams the file through `on_chunk`, one chunk of at most
  /// `chunk_size` bytes (0: 256 KiB) in flight; returns the total bytes.
  /// Each call opens a fresh stream. Errors: those of `read_file`, and
  /// `aborted` when `on_chunk` returned false.
  result<uint64_t> read_stream(const std::string& path,
                               const byte_callback& on_chunk,
                               uint32_t chunk_size = 0);

  /// §13: writes `bytes` atomically (parents created). With `if_version`,
  /// only if the current version matches (empty: the file must not exist).
  /// Errors: `conflict`, `not_a_regular_file`, `path_not_found`,
  /// `permission_denied`, `invalid_argument`, `io_error`.
  result<void> write_file(const std::string& path, std::string bytes,
                          std::optional<std::string> if_version = {});

  /// §13: opens a streamed atomic write (same rules and errors as
  /// `write_file`; the version is checked now and again at commit).
  result<blocking_writer>
  open_write(const std::string& path,
             std::optional<std::string> if_version = {});

  /// Aborts the open write `id` from any thread (e.g. a signal handler
  /// thread); the owner's `blocking_writer` then fails.
  result<void> abort_write(uint64_t id);

  /// §14: removes a file or symlink. Errors: `path_not_found`,
  /// `not_a_regular_file` (a directory), `permission_denied`.
  result<void> remove_file(const std::string& path);

  /// §15: the entries of a directory, sorted by name in byte order.
  /// Errors: `path_not_found` (missing or not a directory),
  /// `permission_denied`, `io_error`.
  result<std::vector<fs::dir_entry>> list_files(const std::string& path);

  /// §16: walks the tree below `path`, `max_depth` levels deep, calling
  /// `on_frame` for each frame; returns the one done frame. Memory holds
  /// one batch of frames, whatever the size of the tree.
  list_summary list(const std::string& path, uint32_t max_depth,
                    const frame_callback& on_frame);

  /// §17: metadata and version token of the path itself (symlinks are not
  /// followed). Errors: `path_not_found`, `permission_denied`, `io_error`.
  result<fs::file_stat> stat(const std::string& path);

private:
  caf::actor_system* sys_;
  filesystem_actor handle_;
};

/// Asks `session` for its filesystem worker (`files_atom`).
/// Errors: `session_stopped`.
result<blocking_files> files_of(blocking_session& session);

} // namespace sandbox::actors
