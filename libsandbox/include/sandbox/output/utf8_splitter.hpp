#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox {

/// Returns how many bytes at the end of `data` are the start of a UTF-8
/// sequence that is valid so far but incomplete: 1 to 3 bytes of a 2-, 3- or
/// 4-byte sequence, checked as strictly as a complete one would be (no
/// overlong forms, no surrogates, nothing above U+10FFFF). Returns 0 when
/// `data` ends with anything else: ASCII, a complete sequence, or bytes that
/// can never become valid UTF-8.
size_t utf8_incomplete_tail(std::string_view data) noexcept;

/// Returns the length (2, 3 or 4) of the complete, valid multi-byte UTF-8
/// sequence that `data` starts with, checked as strictly as
/// `utf8_incomplete_tail` does. Returns 0 when `data` starts with anything
/// else: ASCII, a continuation byte, an invalid or a truncated sequence.
size_t utf8_sequence_at(std::string_view data) noexcept;

/// Cuts a byte stream into chunks that never split a UTF-8 sequence (§8).
///
/// Only a so-far-valid incomplete sequence at the very end of the data seen
/// (at most 3 bytes) is held back until the next `feed`; everything else,
/// including invalid and binary bytes, passes through at once. The
/// concatenation of all outputs and the final `flush` equals the
/// concatenation of all inputs, byte for byte, for any input.
///
/// Owner: whoever reads the stream; not thread-safe.
class utf8_splitter {
public:
  /// Returns the bytes of the held tail plus `in` that can be emitted now.
  /// The result may be empty when all of it is held back.
  std::string feed(std::string_view in);

  /// Appends the bytes of the held tail plus `in` that can be emitted now to
  /// `out`; leaves what `out` held before untouched.
  void feed_into(std::string_view in, std::string& out);

  /// As `feed`, in place: `data` becomes what `feed(data)` would return.
  /// Its bytes are not copied unless bytes were held back before (then they
  /// go in front).
  void feed_in_place(std::string& data);

  /// Returns the held bytes (at the end of the stream) and holds nothing
  /// afterwards.
  std::string flush();

  /// Appends the held bytes to `out` and holds nothing afterwards.
  void flush_into(std::string& out);

  /// Returns whether no bytes are held back.
  bool empty() const noexcept {
    return held_ == 0;
  }

  /// Returns how many bytes are held back (0 to 3).
  size_t held() const noexcept {
    return held_;
  }

private:
  /// The held tail; at most 3 bytes, so no heap memory is needed for it.
  char carry_[4] = {};
  size_t held_ = 0;
};

} // namespace sandbox
