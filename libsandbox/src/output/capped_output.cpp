#include "sandbox/output/capped_output.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "sandbox/output/utf8_splitter.hpp"

namespace sandbox {

capped_output::capped_output(uint64_t cap)
  : head_cap_(static_cast<size_t>(cap / 2)),
    tail_cap_(static_cast<size_t>(cap - cap / 2)) {
  // The buffer starts empty: most executions print little, and reserving
  // the cap up front would cost 16 MiB per stream by default.
}

void capped_output::grow(size_t needed, size_t limit) {
  if (needed <= buf_.capacity())
    return;
  auto want = std::max(needed, 2 * buf_.capacity());
  // Past an eighth of the limit the buffer goes to the limit at once:
  // each later step would copy all that is kept while holding both copies
  // (8 MiB copied into 16 MiB at the default cap), and pages not written
  // yet take no memory.
  if (want > limit / 8)
    want = limit;
  // string::reserve may round a request up to twice the capacity and
  // overshoot the limit; a new string allocates what it is asked for.
  std::string bigger;
  bigger.reserve(want);
  bigger.append(buf_);
  buf_.swap(bigger);
}

uint64_t capped_output::retained_capacity() const noexcept {
  // A short string lives inside the object: no heap memory.
  static const size_t inline_capacity = std::string{}.capacity();
  return buf_.capacity() > inline_capacity ? buf_.capacity() : 0;
}

void capped_output::append(std::string_view data) {
  total_ += data.size();
  if (head_size_ < head_cap_) {
    // Until the head is full, the buffer holds the head alone.
    auto n = std::min(head_cap_ - head_size_, data.size());
    grow(head_size_ + n, buffer_limit());
    buf_.append(data.data(), n);
    head_size_ += n;
    data.remove_prefix(n);
  }
  if (data.empty())
    return;
  if (after_head_size_ < sizeof(after_head_)) {
    auto n = std::min(sizeof(after_head_) - after_head_size_, data.size());
    std::memcpy(after_head_ + after_head_size_, data.data(), n);
    after_head_size_ += n;
  }
  append_tail(data);
}

void capped_output::note_dropped(std::string_view data) noexcept {
  constexpr size_t window = sizeof(last_dropped_);
  // An empty view may have a null data(): memcpy must not see it.
  if (data.empty())
    return;
  if (data.size() >= window) {
    std::memcpy(last_dropped_, data.data() + data.size() - window, window);
    last_dropped_size_ = window;
    return;
  }
  auto keep = std::min(last_dropped_size_, window - data.size());
  std::memmove(last_dropped_, last_dropped_ + last_dropped_size_ - keep, keep);
  std::memcpy(last_dropped_ + keep, data.data(), data.size());
  last_dropped_size_ = keep + data.size();
}

void capped_output::append_tail(std::string_view data) {
  if (tail_cap_ == 0) {
    dropped_ += data.size();
    note_dropped(data);
    return;
  }
  const auto limit = buffer_limit();
  if (buf_.size() < tail_offset()) {
    // The first bytes past the head: the room for the marker comes first.
    grow(tail_offset() + std::min(data.size(), tail_cap_), limit);
    buf_.resize(tail_offset());
  }
  if (data.size() >= tail_cap_) {
    // The new bytes alone fill the ring: all it held and the start of
    // `data` fall out.
    dropped_ += tail_size() + (data.size() - tail_cap_);
    std::string_view old{ring(), tail_size()};
    note_dropped(old.substr(tail_start_));
    note_dropped(old.substr(0, tail_start_));
    note_dropped(data.substr(0, data.size() - tail_cap_));
    data.remove_prefix(data.size() - tail_cap_);
    buf_.resize(tail_offset());
    grow(limit, limit);
    buf_.append(data);
    tail_start_ = 0;
    return;
  }
  if (tail_size() < tail_cap_) {
    // Still filling: no byte falls out yet.
    auto n = std::min(tail_cap_ - tail_size(), data.size());
    grow(buf_.size() + n, limit);
    buf_.append(data.data(), n);
    data.remove_prefix(n);
    if (data.empty())
      return;
  }
  // The ring is full: every new byte overwrites the oldest one.
  dropped_ += data.size();
  char overwritten[sizeof(last_dropped_)];
  size_t n = 0;
  for (auto i = data.size() - std::min(data.size(), sizeof(overwritten));
       i < data.size(); ++i)
    overwritten[n++] = ring()[(tail_start_ + i) % tail_cap_];
  note_dropped(std::string_view{overwritten, n});
  auto first = std::min(data.size(), tail_cap_ - tail_start_);
  std::memcpy(ring() + tail_start_, data.data(), first);
  std::memcpy(ring(), data.data() + first, data.size() - first);
  tail_start_ = (tail_start_ + data.size()) % tail_cap_;
}

std::string capped_output::marker(uint64_t n) {
  return fmt::format("\n[sandbox: {} bytes dropped]\n", n);
}

size_t capped_output::tail_prefix(char* out, size_t n) const noexcept {
  auto size = tail_size();
  n = std::min(n, size);
  for (size_t i = 0; i < n; ++i)
    out[i] = ring()[(tail_start_ + i) % size];
  return n;
}

capped_output::cut_shift capped_output::shift_cuts() const noexcept {
  cut_shift shift;
  if (dropped_ == 0)
    return shift; // the stream is retained whole: there is no cut
  std::string_view head{buf_.data(), head_size_};
  // The head ends with the start of a sequence: drop it if the bytes that
  // followed it in the stream complete a valid character.
  if (auto k = utf8_incomplete_tail(head); k > 0) {
    char seq[6];
    std::memcpy(seq, head.data() + head.size() - k, k);
    std::memcpy(seq + k, after_head_, after_head_size_);
    if (utf8_sequence_at(std::string_view{seq, k + after_head_size_}) > 0)
      shift.head = k;
  }
  // The tail starts with continuation bytes: drop them if the bytes that
  // preceded them in the stream (the last dropped ones, or the end of the
  // head when fewer than three were dropped) start a valid character that
  // they complete.
  char first[4];
  auto first_size = tail_prefix(first, sizeof(first));
  if (first_size == 0 || (first[0] & 0xC0) != 0x80)
    return shift;
  char before[3];
  auto from_head = std::min(head.size(), sizeof(before) - last_dropped_size_);
  if (from_head > 0) // an empty head may have a null data()
    std::memcpy(before, head.data() + head.size() - from_head, from_head);
  std::memcpy(before + from_head, last_dropped_, last_dropped_size_);
  auto before_size = from_head + last_dropped_size_;
  // The lead byte is the last byte before the tail that is no continuation.
  size_t lead = before_size;
  while (lead > 0 && (before[lead - 1] & 0xC0) == 0x80)
    --lead;
  if (lead == 0)
    return shift;
  --lead;
  char seq[7];
  auto in_before = before_size - lead;
  std::memcpy(seq, before + lead, in_before);
  std::memcpy(seq + in_before, first, first_size);
  auto len = utf8_sequence_at(std::string_view{seq, in_before + first_size});
  if (len > in_before)
    shift.tail = len - in_before;
  return shift;
}

uint64_t capped_output::dropped_bytes() const noexcept {
  auto shift = shift_cuts();
  return dropped_ + shift.head + shift.tail;
}

std::string capped_output::take() {
  auto shift = shift_cuts();
  dropped_ += shift.head + shift.tail;
  std::string mark = dropped_ > 0 ? marker(dropped_) : std::string{};
  auto head = head_size_ - shift.head;
  if (auto tail = tail_size(); tail > 0) {
    // In place: the ring in stream order (its oldest byte at
    // `tail_start_`, 0 while not full), the marker after the head, and the
    // tail after the marker, less its first `shift.tail` bytes.
    std::rotate(ring(), ring() + tail_start_, ring() + tail);
    std::memcpy(buf_.data() + head, mark.data(), mark.size());
    std::memmove(buf_.data() + head + mark.size(), ring() + shift.tail,
                 tail - shift.tail);
    buf_.resize(head + mark.size() + tail - shift.tail);
  } else {
    buf_.resize(head);
    buf_ += mark;
  }
  auto out = std::move(buf_);
  reset_buffer();
  return out;
}

void capped_output::reset_buffer() noexcept {
  std::string{}.swap(buf_);
  head_size_ = 0;
  tail_start_ = 0;
  after_head_size_ = 0;
  last_dropped_size_ = 0;
}

void capped_output::reset() noexcept {
  reset_buffer();
  dropped_ = 0;
  total_ = 0;
}

kept_output kept_output::take(capped_output& out, capped_output& err) {
  kept_output k;
  k.truncated = out.truncated() || err.truncated();
  k.dropped_bytes = out.dropped_bytes() + err.dropped_bytes();
  k.out = out.take();
  k.err = err.take();
  return k;
}

} // namespace sandbox
