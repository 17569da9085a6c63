#include "sandbox/capped_output.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace sandbox {

capped_output::capped_output(uint64_t cap)
  : head_cap_(static_cast<size_t>(cap / 2)),
    tail_cap_(static_cast<size_t>(cap - cap / 2)) {
  // Buffers start empty: most executions print little, and reserving the
  // cap up front would cost 16 MiB per stream by default.
}

void capped_output::bounded_append(std::vector<char>& buf,
                                   std::string_view data, size_t limit) {
  auto needed = buf.size() + data.size();
  if (needed > buf.capacity()) {
    // vector::insert may grow to twice the size and overshoot the limit;
    // reserve allocates exactly what it is asked for.
    auto grown = std::max(needed, 2 * buf.capacity());
    buf.reserve(std::min(grown, limit));
  }
  buf.insert(buf.end(), data.begin(), data.end());
}

void capped_output::append(std::string_view data) {
  total_ += data.size();
  if (head_.size() < head_cap_) {
    auto n = std::min(head_cap_ - head_.size(), data.size());
    bounded_append(head_, data.substr(0, n), head_cap_);
    data.remove_prefix(n);
  }
  if (!data.empty())
    append_tail(data);
}

void capped_output::append_tail(std::string_view data) {
  if (tail_cap_ == 0) {
    dropped_ += data.size();
    return;
  }
  if (data.size() >= tail_cap_) {
    // The new bytes alone fill the ring: all it held and the start of
    // `data` fall out.
    dropped_ += tail_.size() + (data.size() - tail_cap_);
    data.remove_prefix(data.size() - tail_cap_);
    tail_.clear();
    bounded_append(tail_, data, tail_cap_);
    tail_start_ = 0;
    return;
  }
  if (tail_.size() < tail_cap_) {
    // Still filling: no byte falls out yet.
    auto n = std::min(tail_cap_ - tail_.size(), data.size());
    bounded_append(tail_, data.substr(0, n), tail_cap_);
    data.remove_prefix(n);
    if (data.empty())
      return;
  }
  // The ring is full: every new byte overwrites the oldest one.
  dropped_ += data.size();
  auto first = std::min(data.size(), tail_cap_ - tail_start_);
  std::memcpy(tail_.data() + tail_start_, data.data(), first);
  std::memcpy(tail_.data(), data.data() + first, data.size() - first);
  tail_start_ = (tail_start_ + data.size()) % tail_cap_;
}

std::string capped_output::marker(uint64_t n) {
  return fmt::format("\n[sandbox: {} bytes dropped]\n", n);
}

std::string capped_output::take() {
  std::string mark = dropped_ > 0 ? marker(dropped_) : std::string{};
  std::string out;
  out.reserve(head_.size() + mark.size() + tail_.size());
  out.append(head_.data(), head_.size());
  out += mark;
  // The ring holds the oldest byte at `tail_start_` (0 while not full).
  out.append(tail_.data() + tail_start_, tail_.size() - tail_start_);
  out.append(tail_.data(), tail_start_);
  std::vector<char>{}.swap(head_);
  std::vector<char>{}.swap(tail_);
  tail_start_ = 0;
  return out;
}

void capped_output::reset() noexcept {
  std::vector<char>{}.swap(head_);
  std::vector<char>{}.swap(tail_);
  tail_start_ = 0;
  dropped_ = 0;
  total_ = 0;
}

} // namespace sandbox
