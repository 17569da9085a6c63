#define CAF_SUITE libsandbox.capped_output
#include "caf/test/unit_test.hpp"
#include "helpers/byte_pattern.hpp"
#include "helpers/check.hpp"

#include <random>
#include <string>
#include <string_view>

#include "sandbox/execution.hpp"
#include "sandbox/output/capped_output.hpp"
#include "sandbox/output/utf8_splitter.hpp"

using sandbox::capped_output;
using sandbox::test::byte_pattern;

CAF_TEST(S9 output under the cap is kept exactly) {
  capped_output out{100};
  out.append("hello ");
  out.append("");
  out.append(std::string("wor\0ld", 6));
  CAF_CHECK(!out.truncated());
  CAF_CHECK_EQUAL(out.dropped_bytes(), 0u);
  CAF_CHECK_EQUAL(out.total_bytes(), 12u);
  CAF_CHECK_EQUAL(out.take(), std::string("hello wor\0ld", 12));
}

CAF_TEST(S9 output of exactly the cap is kept exactly) {
  for (uint64_t cap : {1u, 2u, 7u, 64u}) {
    capped_output out{cap};
    auto data = byte_pattern(0, cap);
    for (char c : data)
      out.append(std::string_view{&c, 1});
    CAF_CHECK(!out.truncated());
    CAF_CHECK_EQUAL(out.take(), data);
  }
}

CAF_TEST(S9 output over the cap keeps head and tail and counts the rest) {
  capped_output out{10};
  out.append("0123456789abcdefghij");
  CAF_CHECK(out.truncated());
  CAF_CHECK_EQUAL(out.dropped_bytes(), 10u);
  CAF_CHECK_EQUAL(out.total_bytes(), 20u);
  CAF_CHECK_EQUAL(out.retained_bytes(), 10u);
  CAF_CHECK_EQUAL(out.take(), "01234\n[sandbox: 10 bytes dropped]\nfghij");
  // The counters survive take() so a result can be filled in any order.
  CAF_CHECK(out.truncated());
  CAF_CHECK_EQUAL(out.dropped_bytes(), 10u);
  CAF_CHECK_EQUAL(out.retained_capacity(), 0u);
}

CAF_TEST(S9 the room between head and tail fits the longest marker) {
  CAF_CHECK_EQUAL(capped_output::marker(UINT64_MAX).size(),
                  capped_output::marker_room);
}

CAF_TEST(S9 an odd cap gives the extra byte to the tail) {
  capped_output out{5};
  out.append("abcdefgh");
  CAF_CHECK_EQUAL(out.take(), "ab\n[sandbox: 3 bytes dropped]\nfgh");
}

CAF_TEST(S9 head and tail are exact for any way of cutting the stream) {
  std::mt19937 rng{9};
  for (int round = 0; round < 200; ++round) {
    auto cap = std::uniform_int_distribution<uint64_t>{0, 64}(rng);
    auto total = std::uniform_int_distribution<size_t>{0, 400}(rng);
    auto data = byte_pattern(round, total);
    capped_output out{cap};
    std::string_view rest{data};
    while (!rest.empty()) {
      auto n = std::min(std::uniform_int_distribution<size_t>{0, 90}(rng),
                        rest.size());
      out.append(rest.substr(0, n));
      rest.remove_prefix(n);
      CAF_CHECK(out.retained_capacity() <= cap + capped_output::marker_room);
    }
    CAF_CHECK_EQUAL(out.total_bytes(), total);
    std::string expected;
    if (total <= cap) {
      expected = data;
      CAF_CHECK(!out.truncated());
    } else {
      auto head = cap / 2;
      auto tail = cap - head;
      expected = data.substr(0, head) + capped_output::marker(total - cap)
                 + data.substr(total - tail);
      CAF_CHECK_EQUAL(out.dropped_bytes(), total - cap);
    }
    CAF_CHECK_EQUAL(out.take(), expected);
  }
}

CAF_TEST(S9 a cap of zero keeps nothing but the marker) {
  capped_output out{0};
  CAF_CHECK_EQUAL(out.take(), "");
  out.append("abc");
  out.append("de");
  CAF_CHECK(out.truncated());
  CAF_CHECK_EQUAL(out.dropped_bytes(), 5u);
  CAF_CHECK_EQUAL(out.retained_capacity(), 0u);
  CAF_CHECK_EQUAL(out.take(), "\n[sandbox: 5 bytes dropped]\n");
}

CAF_TEST(S9 reset forgets the stream) {
  capped_output out{4};
  out.append("abcdefgh");
  out.reset();
  CAF_CHECK(!out.truncated());
  CAF_CHECK_EQUAL(out.total_bytes(), 0u);
  out.append("xy");
  CAF_CHECK_EQUAL(out.take(), "xy");
}

CAF_TEST(S9 memory stays bounded over a gibibyte of output) {
  // 16384 pieces of 64 KiB: 1 GiB through the default 16 MiB cap.
  constexpr size_t piece_size = 64 * 1024;
  constexpr uint64_t pieces = 16384;
  const uint64_t cap = sandbox::default_output_cap;
  capped_output out{cap};
  std::string piece(piece_size, 'x');
  uint64_t max_capacity = 0;
  for (uint64_t i = 0; i < pieces; ++i) {
    // Stamp each piece so that head and tail can be checked by position.
    auto stamp = std::to_string(i);
    piece.replace(0, stamp.size(), stamp);
    out.append(piece);
    max_capacity = std::max(max_capacity, out.retained_capacity());
  }
  const uint64_t total = pieces * piece_size;
  CAF_CHECK_EQUAL(out.total_bytes(), total);
  CAF_CHECK_EQUAL(out.dropped_bytes(), total - cap);
  CAF_CHECK(max_capacity <= cap + capped_output::marker_room);
  CAF_CHECK_EQUAL(out.retained_bytes(), cap);
  auto held = out.retained_capacity();
  auto kept = out.take();
  CAF_CHECK_EQUAL(kept.size(), cap + capped_output::marker(total - cap).size());
  // The result is the buffer itself, not a copy: taking it costs no
  // second cap.
  CAF_CHECK_EQUAL(kept.capacity(), held);
  // The head starts with piece 0, the tail ends with the last piece.
  CAF_CHECK_EQUAL(kept.compare(0, 1, "0"), 0);
  auto last_start = kept.size() - piece_size;
  CAF_CHECK_EQUAL(kept.compare(last_start, 5, std::to_string(pieces - 1)), 0);
}

CAF_TEST(S9 the last error line of a long stream is in the tail) {
  capped_output out{4096};
  out.append("build started\n");
  for (int i = 0; i < 100000; ++i)
    out.append("compiling unit " + std::to_string(i) + "\n");
  out.append("error: undefined reference to `main'\n");
  CAF_CHECK(out.truncated());
  auto kept = out.take();
  CAF_CHECK_EQUAL(kept.rfind("build started\n", 0), 0u);
  const std::string last = "error: undefined reference to `main'\n";
  CAF_CHECK_EQUAL(kept.substr(kept.size() - last.size()), last);
  CAF_CHECK(kept.find("bytes dropped]\n") != std::string::npos);
}

namespace {

/// Returns whether `s` is valid UTF-8 throughout.
bool valid_utf8(std::string_view s) {
  while (!s.empty()) {
    if (static_cast<unsigned char>(s[0]) < 0x80) {
      s.remove_prefix(1);
      continue;
    }
    auto n = sandbox::utf8_sequence_at(s);
    if (n == 0)
      return false;
    s.remove_prefix(n);
  }
  return true;
}

/// Splits a result of `take()` at its marker into head and tail.
std::pair<std::string, std::string> split_at_marker(const std::string& kept,
                                                    uint64_t dropped) {
  auto mark = capped_output::marker(dropped);
  auto pos = kept.find(mark);
  if (pos == std::string::npos)
    return {kept, ""};
  return {kept.substr(0, pos), kept.substr(pos + mark.size())};
}

} // namespace

CAF_TEST(A18 retained UTF - 8 output never starts or ends inside a char) {
  std::string text = "HEAD";
  for (int i = 0; i < 500; ++i)
    text += "\xC3\xA9"; // é
  text += "TAIL";
  // 101 leaves a tail of 51 bytes, which used to start with a lone 0xA9;
  // 102 leaves a head of 51 bytes, which used to end with a lone 0xC3.
  for (uint64_t cap : {101u, 102u, 103u, 100u}) {
    capped_output out{cap};
    out.append(text);
    auto dropped = out.dropped_bytes();
    auto kept = out.take();
    CAF_CHECK_EQUAL(out.dropped_bytes(), dropped);
    CAF_CHECK(valid_utf8(kept));
    auto [head, tail] = split_at_marker(kept, dropped);
    CAF_CHECK_EQUAL(text.compare(0, head.size(), head), 0);
    CAF_CHECK(text.size() >= tail.size()
              && text.compare(text.size() - tail.size(), tail.size(), tail)
                   == 0);
    // The counter is exact: every byte is either kept or dropped.
    CAF_CHECK_EQUAL(head.size() + tail.size() + dropped, text.size());
    CAF_CHECK(head.size() + 1 >= cap / 2);
    CAF_CHECK(tail.size() + 1 >= cap - cap / 2);
  }
  // The probe of the finding: the tail loses the half character.
  capped_output out{101};
  out.append(text);
  CAF_CHECK_EQUAL(out.take(), text.substr(0, 50)
                                + capped_output::marker(text.size() - 100)
                                + text.substr(text.size() - 50));
}

CAF_TEST(A18 cuts move to character boundaries however output arrives) {
  // Characters of every length, so that cuts fall at every offset.
  const std::string chars[] = {"a", "\xC3\xA9", "\xE2\x82\xAC",
                               "\xF0\x9F\x98\x80"};
  std::mt19937 rng{18};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    auto count = std::uniform_int_distribution<int>{0, 120}(rng);
    for (int i = 0; i < count; ++i)
      text += chars[std::uniform_int_distribution<int>{0, 3}(rng)];
    auto cap = std::uniform_int_distribution<uint64_t>{0, 64}(rng);
    capped_output out{cap};
    std::string_view rest{text};
    while (!rest.empty()) {
      auto n = std::min(std::uniform_int_distribution<size_t>{1, 9}(rng),
                        rest.size());
      out.append(rest.substr(0, n));
      rest.remove_prefix(n);
    }
    auto dropped = out.dropped_bytes();
    auto kept = out.take();
    CAF_CHECK(valid_utf8(kept));
    if (text.size() <= cap) {
      CAF_CHECK_EQUAL(kept, text);
      continue;
    }
    auto [head, tail] = split_at_marker(kept, dropped);
    CAF_CHECK_EQUAL(text.compare(0, head.size(), head), 0);
    CAF_CHECK_EQUAL(text.compare(text.size() - tail.size(), tail.size(), tail),
                    0);
    CAF_CHECK_EQUAL(head.size() + tail.size() + dropped, text.size());
    // A cut moves by less than one character.
    CAF_CHECK(head.size() + 3 >= cap / 2);
    CAF_CHECK(tail.size() + 3 >= cap - cap / 2);
  }
}

CAF_TEST(A18 bytes that are not valid UTF - 8 are cut where they fall) {
  // A lead byte followed by no continuation byte, and continuation bytes
  // after an ASCII byte: nothing there is a character to keep whole.
  std::string data = "abc\xC3"
                     "Z"
                     + std::string(20, 'x')
                     + "y\xA9\xA9"
                       "cd";
  capped_output out{8};
  out.append(data);
  CAF_CHECK_EQUAL(out.dropped_bytes(), data.size() - 8);
  auto kept = out.take();
  CAF_CHECK_EQUAL(kept, "abc\xC3" + capped_output::marker(data.size() - 8)
                          + "\xA9\xA9"
                            "cd");
}
