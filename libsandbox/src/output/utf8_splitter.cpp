#include "sandbox/output/utf8_splitter.hpp"

#include <cstring>

namespace sandbox {

namespace {

/// Returns the length of the sequence that `lead` starts, or 0 if `lead`
/// cannot start a multi-byte sequence (ASCII, continuation byte, 0xC0,
/// 0xC1 and 0xF5..0xFF).
size_t sequence_length(unsigned char lead) noexcept {
  if (lead >= 0xC2 && lead <= 0xDF)
    return 2;
  if (lead >= 0xE0 && lead <= 0xEF)
    return 3;
  if (lead >= 0xF0 && lead <= 0xF4)
    return 4;
  return 0;
}

/// Returns whether `byte` may follow `lead` as the second byte of a
/// sequence. The narrower ranges after E0, ED, F0 and F4 rule out overlong
/// forms, surrogates and code points above U+10FFFF (RFC 3629).
bool valid_second(unsigned char lead, unsigned char byte) noexcept {
  switch (lead) {
    case 0xE0:
      return byte >= 0xA0 && byte <= 0xBF;
    case 0xED:
      return byte >= 0x80 && byte <= 0x9F;
    case 0xF0:
      return byte >= 0x90 && byte <= 0xBF;
    case 0xF4:
      return byte >= 0x80 && byte <= 0x8F;
    default:
      return byte >= 0x80 && byte <= 0xBF;
  }
}

bool is_continuation(unsigned char byte) noexcept {
  return (byte & 0xC0) == 0x80;
}

/// Moves the incomplete sequence at the end of `s` (of its bytes from
/// `from` on) to `carry`; returns its length.
size_t hold_back(std::string& s, size_t from, char* carry) {
  auto held = utf8_incomplete_tail(std::string_view{s}.substr(from));
  if (held > 0) {
    std::memcpy(carry, s.data() + s.size() - held, held);
    s.resize(s.size() - held);
  }
  return held;
}

} // namespace

size_t utf8_incomplete_tail(std::string_view data) noexcept {
  auto bytes = reinterpret_cast<const unsigned char*>(data.data());
  auto n = data.size();
  // Walk back over at most 3 continuation bytes to the lead byte; a longer
  // run of continuation bytes cannot be part of one incomplete sequence.
  for (size_t k = 1; k <= 3 && k <= n; ++k) {
    auto lead = bytes[n - k];
    if (is_continuation(lead))
      continue;
    auto len = sequence_length(lead);
    if (len == 0 || k >= len)
      return 0; // ASCII, an invalid byte, or a sequence that is complete
    if (k >= 2 && !valid_second(lead, bytes[n - k + 1]))
      return 0;
    // Bytes after the second are any continuation byte; the loop checked
    // that already.
    return k;
  }
  return 0;
}

size_t utf8_sequence_at(std::string_view data) noexcept {
  auto bytes = reinterpret_cast<const unsigned char*>(data.data());
  auto len = data.empty() ? 0 : sequence_length(bytes[0]);
  if (len == 0 || data.size() < len || !valid_second(bytes[0], bytes[1]))
    return 0;
  for (size_t i = 2; i < len; ++i)
    if (!is_continuation(bytes[i]))
      return 0;
  return len;
}

std::string utf8_splitter::feed(std::string_view in) {
  std::string out;
  feed_into(in, out);
  return out;
}

void utf8_splitter::feed_into(std::string_view in, std::string& out) {
  auto start = out.size();
  out.reserve(start + held_ + in.size());
  out.append(carry_, held_);
  out.append(in);
  held_ = hold_back(out, start, carry_);
}

void utf8_splitter::feed_in_place(std::string& data) {
  if (held_ > 0)
    data.insert(0, carry_, held_);
  held_ = hold_back(data, 0, carry_);
}

std::string utf8_splitter::flush() {
  std::string out;
  flush_into(out);
  return out;
}

void utf8_splitter::flush_into(std::string& out) {
  out.append(carry_, held_);
  held_ = 0;
}

} // namespace sandbox
