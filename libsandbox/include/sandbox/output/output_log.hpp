#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/execution.hpp"

namespace sandbox {

/// What `output_log::read` returns: the retained bytes from an offset on,
/// as chunks of one stream each, in the order they were written.
struct log_read {
  std::vector<output_chunk> chunks;
  /// Offset of the first byte returned (the offset asked, moved past what
  /// the log no longer holds).
  uint64_t offset = 0;
  /// Offset just past the last byte returned: where the next read starts.
  uint64_t next_offset = 0;
  /// Bytes between the offset asked and `offset`: written, but no longer
  /// retained (0 when nothing was lost).
  uint64_t gap = 0;
};

/// The output of a long-lived process (docs/processes.md): every byte it
/// wrote has an absolute offset (0 is its first), stdout and stderr in one
/// sequence, each chunk tagged with its stream. The log keeps the last
/// `retain` bytes; a read from an offset the log no longer holds starts at
/// the oldest byte it holds and says how many bytes it skipped. Reading
/// never consumes: any number of readers see the same bytes.
///
/// Memory: the retained bytes plus one small record per chunk retained
/// (chunks of one stream that follow each other are merged while the last
/// one is small). Owner: one actor; not thread-safe.
class output_log {
public:
  /// Keeps at most `retain` bytes (0 keeps nothing: every read is a gap).
  explicit output_log(uint64_t retain);

  /// Appends what `stream` wrote; drops the oldest bytes beyond `retain`.
  void append(stream_kind stream, std::string_view bytes);

  /// Offset of the oldest byte retained (`end()` when none is).
  uint64_t begin() const noexcept {
    return end_ - retained_;
  }

  /// Offset of the next byte to be written: every byte written so far.
  uint64_t end() const noexcept {
    return end_;
  }

  uint64_t retained() const noexcept {
    return retained_;
  }

  uint64_t retain() const noexcept {
    return retain_;
  }

  /// Up to `max` bytes from `from` on (`from` at most `end()`; a larger
  /// one reads nothing from `end()`). `max` 0 reads nothing.
  log_read read(uint64_t from, uint64_t max) const;

private:
  struct piece {
    stream_kind stream;
    /// Offset of `data`'s first byte.
    uint64_t offset;
    std::string data;
  };

  void drop_front(uint64_t n);

  uint64_t retain_;
  uint64_t end_ = 0;
  uint64_t retained_ = 0;
  std::deque<piece> pieces_;
};

} // namespace sandbox
