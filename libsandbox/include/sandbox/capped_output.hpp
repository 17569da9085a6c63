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
/// live in a ring buffer that overwrites its oldest bytes. Buffers grow with
/// the output and never beyond `cap` bytes together, whatever the size of
/// the stream. Bytes that fall out between head and tail are counted as
/// dropped.
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
  /// The first bytes of the stream; full once it holds `head_cap_` bytes.
  std::vector<char> head_;
  /// The ring of the last bytes; while it holds less than `tail_cap_` bytes
  /// it is in stream order, once full its oldest byte is at `tail_start_`.
  std::vector<char> tail_;
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
