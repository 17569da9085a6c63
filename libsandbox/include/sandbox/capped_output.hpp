#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox {

/// Retains at most `cap` bytes of an output stream: its head and its tail,
/// so that a failing build still shows how it started and the error it
/// printed last (R9).
///
/// The first `cap / 2` bytes form the head; the last `cap - cap / 2` bytes
/// live in a ring buffer that overwrites its oldest bytes. Buffers grow with
/// the output and never beyond `cap` bytes together, whatever the size of
/// the stream. Bytes that fall out between head and tail are counted as
/// dropped.
///
/// Owner: the process actor that reads the stream; not thread-safe.
class capped_output {
public:
  /// Constructs an empty buffer retaining at most `cap` bytes. A cap of 0
  /// keeps nothing and counts every byte as dropped.
  explicit capped_output(uint64_t cap);

  /// Appends the next bytes of the stream.
  void append(std::string_view data);

  /// Returns the retained bytes: exactly the stream if nothing was dropped,
  /// else head + `\n[sandbox: N bytes dropped]\n` + tail. Releases the
  /// buffers; the counters keep their values, so `truncated()`,
  /// `dropped_bytes()` and `total_bytes()` still describe the stream. Call
  /// `reset()` before appending a new stream.
  std::string take();

  /// Forgets the stream: empty buffers, zero counters, same cap.
  void reset() noexcept;

  /// Returns whether bytes were dropped.
  bool truncated() const noexcept {
    return dropped_ > 0;
  }

  /// Returns how many bytes fell out between head and tail.
  uint64_t dropped_bytes() const noexcept {
    return dropped_;
  }

  /// Returns how many bytes were appended in total.
  uint64_t total_bytes() const noexcept {
    return total_;
  }

  /// Returns how many bytes are retained right now (at most `cap`).
  uint64_t retained_bytes() const noexcept {
    return head_.size() + tail_.size();
  }

  /// Returns the heap memory the buffers hold, in bytes; never more than
  /// `cap`.
  uint64_t retained_capacity() const noexcept {
    return head_.capacity() + tail_.capacity();
  }

  /// Returns the cap given at construction.
  uint64_t cap() const noexcept {
    return head_cap_ + tail_cap_;
  }

  /// Returns the marker that `take` puts where `n` bytes were dropped.
  static std::string marker(uint64_t n);

private:
  /// Appends `data` to `buf`, growing it geometrically but never beyond
  /// `limit` bytes of capacity.
  static void bounded_append(std::vector<char>& buf, std::string_view data,
                             size_t limit);

  /// Feeds bytes past the head into the tail ring.
  void append_tail(std::string_view data);

  size_t head_cap_;
  size_t tail_cap_;
  /// The first bytes of the stream; full once it holds `head_cap_` bytes.
  std::vector<char> head_;
  /// The ring of the last bytes; while it holds less than `tail_cap_` bytes
  /// it is in stream order, once full its oldest byte is at `tail_start_`.
  std::vector<char> tail_;
  size_t tail_start_ = 0;
  uint64_t dropped_ = 0;
  uint64_t total_ = 0;
};

} // namespace sandbox
