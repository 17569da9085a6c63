#define CAF_SUITE libsandbox.output_log
#include "caf/test/unit_test.hpp"
#include "helpers/byte_pattern.hpp"

#include <random>
#include <string>

#include "sandbox/output/output_log.hpp"

using sandbox::log_read;
using sandbox::output_log;
using sandbox::stream_kind;
using sandbox::test::byte_pattern;

namespace {

std::string joined(const log_read& r) {
  std::string out;
  for (auto& c : r.chunks)
    out += c.data;
  return out;
}

} // namespace

CAF_TEST(a read returns the bytes from its offset with the next offset) {
  output_log log{1024};
  log.append(stream_kind::out, "hello ");
  log.append(stream_kind::out, "world\n");
  auto r = log.read(0, 1000);
  CAF_CHECK_EQUAL(joined(r), "hello world\n");
  CAF_CHECK_EQUAL(r.offset, 0u);
  CAF_CHECK_EQUAL(r.next_offset, 12u);
  CAF_CHECK_EQUAL(r.gap, 0u);
  auto tail = log.read(6, 1000);
  CAF_CHECK_EQUAL(joined(tail), "world\n");
  CAF_CHECK_EQUAL(tail.offset, 6u);
  // Reading does not consume: the same bytes again.
  CAF_CHECK_EQUAL(joined(log.read(0, 1000)), "hello world\n");
}

CAF_TEST(chunks keep their stream and their order) {
  output_log log{1024};
  log.append(stream_kind::out, "a");
  log.append(stream_kind::err, "b");
  log.append(stream_kind::out, "c");
  auto r = log.read(0, 10);
  CAF_REQUIRE_EQUAL(r.chunks.size(), 3u);
  CAF_CHECK(r.chunks[0].stream == stream_kind::out);
  CAF_CHECK_EQUAL(r.chunks[0].data, "a");
  CAF_CHECK(r.chunks[1].stream == stream_kind::err);
  CAF_CHECK_EQUAL(r.chunks[1].data, "b");
  CAF_CHECK(r.chunks[2].stream == stream_kind::out);
  CAF_CHECK_EQUAL(r.chunks[2].data, "c");
}

CAF_TEST(max bounds a read and the next read continues where it stopped) {
  output_log log{1 << 20};
  for (uint64_t at = 0; at < 100000; at += 777)
    log.append(at % 2 ? stream_kind::err : stream_kind::out,
               byte_pattern(at, 777));
  uint64_t at = 0;
  std::string all;
  while (at < log.end()) {
    auto r = log.read(at, 1000);
    CAF_REQUIRE_EQUAL(r.offset, at);
    CAF_REQUIRE_EQUAL(r.gap, 0u);
    CAF_REQUIRE(r.next_offset - r.offset <= 1000u);
    CAF_REQUIRE(r.next_offset > r.offset);
    all += joined(r);
    at = r.next_offset;
  }
  CAF_CHECK_EQUAL(all, byte_pattern(0, log.end()));
}

CAF_TEST(what falls out of retention is reported as an exact gap) {
  output_log log{1000};
  log.append(stream_kind::out, byte_pattern(0, 600));
  log.append(stream_kind::out, byte_pattern(600, 600));
  CAF_CHECK_EQUAL(log.end(), 1200u);
  CAF_CHECK_EQUAL(log.begin(), 200u);
  CAF_CHECK_EQUAL(log.retained(), 1000u);
  auto r = log.read(50, 5000);
  CAF_CHECK_EQUAL(r.gap, 150u);
  CAF_CHECK_EQUAL(r.offset, 200u);
  CAF_CHECK_EQUAL(r.next_offset, 1200u);
  CAF_CHECK_EQUAL(joined(r), byte_pattern(200, 1000));
  // A read inside the window has no gap.
  auto inside = log.read(700, 100);
  CAF_CHECK_EQUAL(inside.gap, 0u);
  CAF_CHECK_EQUAL(joined(inside), byte_pattern(700, 100));
}

CAF_TEST(a write larger than the retention keeps its tail) {
  output_log log{100};
  log.append(stream_kind::err, "x");
  log.append(stream_kind::out, byte_pattern(1, 1000));
  CAF_CHECK_EQUAL(log.end(), 1001u);
  CAF_CHECK_EQUAL(log.begin(), 901u);
  auto r = log.read(0, 1000);
  CAF_CHECK_EQUAL(r.gap, 901u);
  CAF_CHECK_EQUAL(joined(r), byte_pattern(901, 100));
  CAF_REQUIRE_EQUAL(r.chunks.size(), 1u);
  CAF_CHECK(r.chunks[0].stream == stream_kind::out);
}

CAF_TEST(a log that retains nothing reports every byte as a gap) {
  output_log log{0};
  log.append(stream_kind::out, "abc");
  auto r = log.read(0, 10);
  CAF_CHECK(r.chunks.empty());
  CAF_CHECK_EQUAL(r.gap, 3u);
  CAF_CHECK_EQUAL(r.next_offset, 3u);
}

CAF_TEST(an offset past the end reads nothing from the end) {
  output_log log{10};
  log.append(stream_kind::out, "abc");
  auto r = log.read(99, 10);
  CAF_CHECK(r.chunks.empty());
  CAF_CHECK_EQUAL(r.offset, 3u);
  CAF_CHECK_EQUAL(r.next_offset, 3u);
  CAF_CHECK_EQUAL(r.gap, 0u);
}

CAF_TEST(readers at random offsets see every retained byte and exact gaps) {
  std::mt19937_64 rng{42};
  output_log log{5000};
  uint64_t written = 0;
  for (int round = 0; round < 2000; ++round) {
    auto n = std::uniform_int_distribution<size_t>{1, 3000}(rng);
    log.append(rng() % 3 == 0 ? stream_kind::err : stream_kind::out,
               byte_pattern(written, n));
    written += n;
    auto from = std::uniform_int_distribution<uint64_t>{0, written}(rng);
    auto max = std::uniform_int_distribution<uint64_t>{1, 8000}(rng);
    auto r = log.read(from, max);
    auto first = std::max<uint64_t>(from, written > 5000 ? written - 5000 : 0);
    CAF_REQUIRE_EQUAL(r.offset, first);
    CAF_REQUIRE_EQUAL(r.gap, first - from);
    uint64_t last = std::min(written, first + max);
    CAF_REQUIRE_EQUAL(r.next_offset, last);
    CAF_REQUIRE_EQUAL(joined(r), byte_pattern(first, r.next_offset - first));
    CAF_REQUIRE(log.retained() <= 5000u);
  }
}
