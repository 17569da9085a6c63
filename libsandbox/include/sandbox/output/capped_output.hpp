#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox {

/// Retains at most `cap` bytes of an output stream: its head and its tail,
/// so that a failing build still shows how it started and the error it
/// printed last (§9).
///
/// The first `cap / 2` bytes form the head; the last `cap - cap / 2` bytes
/// live in a ring buffer that overwrites its oldest bytes. Bytes that fall
/// out between head and tail are counted as dropped.
///
/// Head and tail share one buffer, with room for the marker between them,
/// which `take` hands over as the result: the retained output is never
/// copied, so a stream never holds more than its cap, not even while its
/// result is made. The buffer grows with the output (most executions print
/// little), and to its full size (`cap + marker_room`) at once when the
/// output passes an eighth of that, so that the head is copied at most
/// while it is small; pages not written yet take no memory.
///
/// A cut never splits a character of valid UTF-8 text: when the end of the
/// head or the start of the tail falls inside a valid multi-byte sequence,
/// the cut moves to the character boundary and the bytes of that character
/// are dropped too (so the head can be up to 3 bytes shorter than `cap / 2`
/// and the tail up to 3 bytes shorter than its share). Bytes that are not
/// valid UTF-8 are cut where they fall. `dropped_bytes` always counts
/// exactly the bytes of the stream that `take` leaves out.
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
  /// else head + `\n[sandbox: N bytes dropped]\n` + tail, where N is
  /// `dropped_bytes()`. Releases the buffers; the counters keep their
  /// values, so `truncated()`, `dropped_bytes()` and `total_bytes()` still
  /// describe the stream. Call `reset()` before appending a new stream.
  std::string take();

  /// Forgets the stream: empty buffers, zero counters, same cap.
  void reset() noexcept;

  /// Returns whether bytes were dropped.
  bool truncated() const noexcept {
    return dropped_ > 0;
  }

  /// Returns how many bytes fell out between head and tail, including the
  /// bytes of a character that a cut moved past.
  uint64_t dropped_bytes() const noexcept;

  /// Returns how many bytes were appended in total.
  uint64_t total_bytes() const noexcept {
    return total_;
  }

  /// Returns how many bytes are retained right now (at most `cap`).
  uint64_t retained_bytes() const noexcept {
    return head_size_ + tail_size();
  }

  /// Returns the heap memory the buffer holds, in bytes; never more than
  /// `cap + marker_room`.
  uint64_t retained_capacity() const noexcept;

  /// Returns the cap given at construction.
  uint64_t cap() const noexcept {
    return head_cap_ + tail_cap_;
  }

  /// Returns the marker that `take` puts where `n` bytes were dropped.
  static std::string marker(uint64_t n);

  /// The longest marker: the room kept for it between head and tail.
  static constexpr size_t marker_room = 47;

private:
  /// Makes room for `needed` bytes in `buf_`, growing it geometrically
  /// but never beyond `limit` bytes of capacity.
  void grow(size_t needed, size_t limit);

  /// Where the tail starts in `buf_`: after the whole head and the room
  /// for the marker.
  size_t tail_offset() const noexcept {
    return head_cap_ + marker_room;
  }

  /// The most the buffer ever holds: the head, and the room and the tail
  /// when there is a tail.
  size_t buffer_limit() const noexcept {
    return tail_cap_ > 0 ? tail_offset() + tail_cap_ : head_cap_;
  }

  /// Bytes in the tail ring.
  size_t tail_size() const noexcept {
    return buf_.size() > tail_offset() ? buf_.size() - tail_offset() : 0;
  }

  /// The tail ring in `buf_`.
  char* ring() noexcept {
    return buf_.data() + tail_offset();
  }
  const char* ring() const noexcept {
    return buf_.data() + tail_offset();
  }

  /// Releases the buffer and forgets its bytes; the counters stay.
  void reset_buffer() noexcept;

  /// Feeds bytes past the head into the tail ring.
  void append_tail(std::string_view data);

  /// Remembers the last bytes that fell out (in stream order).
  void note_dropped(std::string_view data) noexcept;

  /// How many bytes the cuts move so that they do not split a character:
  /// off the end of the head and off the start of the tail.
  struct cut_shift {
    size_t head = 0;
    size_t tail = 0;
  };
  cut_shift shift_cuts() const noexcept;

  /// Copies up to `n` bytes of the tail, in stream order, to `out`.
  size_t tail_prefix(char* out, size_t n) const noexcept;

  size_t head_cap_;
  size_t tail_cap_;
  /// The first bytes of the stream (`head_size_` of them; full at
  /// `head_cap_`); once bytes go past the head, `marker_room` bytes of room
  /// and then the ring of the last bytes, up to `tail_cap_`. While the
  /// ring holds less than `tail_cap_` bytes it is in stream order; once
  /// full, its oldest byte is at `tail_start_`.
  std::string buf_;
  size_t head_size_ = 0;
  size_t tail_start_ = 0;
  uint64_t dropped_ = 0;
  uint64_t total_ = 0;
  /// The first bytes after the head and the last bytes that fell out: the
  /// context that tells whether a cut splits a character (a UTF-8 sequence
  /// is at most 4 bytes long).
  char after_head_[3] = {};
  size_t after_head_size_ = 0;
  char last_dropped_[3] = {};
  size_t last_dropped_size_ = 0;
};

/// What two capped streams kept of an execution's output, taken from
/// them (`capped_output::take`).
struct kept_output {
  std::string out;
  std::string err;
  /// Bytes were dropped from either stream.
  bool truncated = false;
  /// Bytes dropped from both streams together.
  uint64_t dropped_bytes = 0;

  /// Takes what `out` and `err` retained.
  static kept_output take(capped_output& out, capped_output& err);
};

} // namespace sandbox
