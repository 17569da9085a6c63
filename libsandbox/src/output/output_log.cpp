#include "sandbox/output/output_log.hpp"

#include <algorithm>

namespace sandbox {

namespace {

/// A chunk of the same stream is merged into the last one while that one
/// is smaller than this: a process that prints a line at a time does not
/// cost a record per line.
constexpr size_t merge_below = 4096;

} // namespace

output_log::output_log(uint64_t retain) : retain_(retain) {
}

void output_log::append(stream_kind stream, std::string_view bytes) {
  if (bytes.empty())
    return;
  auto start = end_;
  end_ += bytes.size();
  // Only the tail of a write larger than the whole log is kept.
  if (bytes.size() > retain_) {
    auto skip = bytes.size() - retain_;
    bytes.remove_prefix(skip);
    start += skip;
    pieces_.clear();
    retained_ = 0;
    if (bytes.empty())
      return;
  }
  if (!pieces_.empty() && pieces_.back().stream == stream
      && pieces_.back().data.size() < merge_below)
    pieces_.back().data.append(bytes);
  else {
    // The last piece is complete: it gives back what its appends reserved.
    if (!pieces_.empty())
      pieces_.back().data.shrink_to_fit();
    pieces_.push_back(piece{stream, start, std::string{bytes}});
  }
  retained_ += bytes.size();
  if (retained_ > retain_)
    drop_front(retained_ - retain_);
}

void output_log::drop_front(uint64_t n) {
  while (n > 0 && !pieces_.empty()) {
    auto& p = pieces_.front();
    if (p.data.size() <= n) {
      n -= p.data.size();
      retained_ -= p.data.size();
      pieces_.pop_front();
      continue;
    }
    p.data.erase(0, n);
    p.offset += n;
    retained_ -= n;
    n = 0;
  }
}

log_read output_log::read(uint64_t from, uint64_t max) const {
  log_read out;
  from = std::min(from, end_);
  out.offset = std::max(from, begin());
  out.gap = out.offset - from;
  out.next_offset = out.offset;
  if (max == 0 || out.offset == end_)
    return out;
  // The piece holding `out.offset`: the last one starting at or before it.
  auto it = std::upper_bound(pieces_.begin(), pieces_.end(), out.offset,
                             [](uint64_t at, const piece& p) {
                               return at < p.offset;
                             });
  if (it != pieces_.begin())
    --it;
  for (; it != pieces_.end() && max > 0; ++it) {
    auto skip = out.next_offset - it->offset;
    auto n = std::min<uint64_t>(it->data.size() - skip, max);
    if (!out.chunks.empty() && out.chunks.back().stream == it->stream)
      out.chunks.back().data.append(it->data, skip, n);
    else
      out.chunks.push_back(output_chunk{it->stream, it->data.substr(skip, n)});
    out.next_offset += n;
    max -= n;
  }
  return out;
}

} // namespace sandbox
