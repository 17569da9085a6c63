#define CAF_SUITE libsandbox.utf8_splitter
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/output/utf8_splitter.hpp"

using namespace std::literals;

using sandbox::utf8_splitter;

namespace {

/// Returns whether `s` is valid UTF-8 (RFC 3629: no overlong forms, no
/// surrogates, nothing above U+10FFFF). Written independently of the code
/// under test so that the two check each other.
bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < s.size()) {
    auto c = byte(i);
    uint32_t cp;
    size_t len;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      len = 2;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      len = 3;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      len = 4;
    } else {
      return false;
    }
    if (i + len > s.size())
      return false;
    for (size_t k = 1; k < len; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    static constexpr uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

/// Feeds `pieces` through a fresh splitter; returns every output, the flush
/// last (empty outputs included).
std::vector<std::string> split(const std::vector<std::string_view>& pieces) {
  utf8_splitter splitter;
  std::vector<std::string> outputs;
  for (auto piece : pieces)
    outputs.push_back(splitter.feed(piece));
  outputs.push_back(splitter.flush());
  return outputs;
}

std::string concat(const std::vector<std::string>& xs) {
  std::string out;
  for (const auto& x : xs)
    out += x;
  return out;
}

/// Checks that a character split at every position across two feeds arrives
/// whole in one output.
void check_every_split(std::string_view prefix, std::string_view ch,
                       std::string_view suffix) {
  auto whole = std::string{prefix} + std::string{ch} + std::string{suffix};
  for (size_t cut = prefix.size() + 1; cut < prefix.size() + ch.size(); ++cut) {
    std::string_view all{whole};
    auto outputs = split({all.substr(0, cut), all.substr(cut)});
    CAF_CHECK_EQUAL(concat(outputs), whole);
    CAF_CHECK_EQUAL(outputs[0], prefix);
    CAF_CHECK_EQUAL(outputs[1], std::string{ch} + std::string{suffix});
    CAF_CHECK_EQUAL(outputs[2], "");
  }
}

} // namespace

CAF_TEST(S8 a 4 - byte character split anywhere arrives whole) {
  check_every_split("", "\xF0\x9F\x98\x80", "");
  check_every_split("ab", "\xF0\x9F\x98\x80", "cd");
  check_every_split("\xC3\xA9", "\xF4\x8F\xBF\xBF", "\xC3\xA9");
}

CAF_TEST(S8 2 - and3 - byte characters split anywhere arrive whole) {
  check_every_split("x", "\xC3\xA9", "y");
  check_every_split("", "\xC2\x80", "");
  check_every_split("x", "\xE2\x82\xAC", "y");
  check_every_split("", "\xE0\xA0\x80", "");
  check_every_split("", "\xED\x9F\xBF", "");
  check_every_split("", "\xEF\xBF\xBF", "");
}

CAF_TEST(S8 a character fed one byte at a time arrives in one output) {
  utf8_splitter splitter;
  CAF_CHECK_EQUAL(splitter.feed("\xF0"), "");
  CAF_CHECK_EQUAL(splitter.held(), 1u);
  CAF_CHECK_EQUAL(splitter.feed("\x9F"), "");
  CAF_CHECK_EQUAL(splitter.feed("\x98"), "");
  CAF_CHECK(!splitter.empty());
  CAF_CHECK_EQUAL(splitter.feed("\x80"), "\xF0\x9F\x98\x80");
  CAF_CHECK(splitter.empty());
  CAF_CHECK_EQUAL(splitter.flush(), "");
}

CAF_TEST(S8 an incomplete character at the end of the stream is flushed) {
  utf8_splitter splitter;
  CAF_CHECK_EQUAL(splitter.feed("abc\xE2\x82"), "abc");
  CAF_CHECK_EQUAL(splitter.flush(), "\xE2\x82");
  CAF_CHECK(splitter.empty());
  CAF_CHECK_EQUAL(splitter.flush(), "");
}

CAF_TEST(S8 a held prefix that is not continued passes through) {
  utf8_splitter splitter;
  CAF_CHECK_EQUAL(splitter.feed("\xE2\x82"), "");
  CAF_CHECK_EQUAL(splitter.feed("A"), "\xE2\x82"
                                      "A");
  CAF_CHECK(splitter.empty());
}

CAF_TEST(S8 invalid bytes are never held) {
  // Bytes that can never start a valid sequence.
  for (auto bad :
       {"\xFF"sv, "\xFE"sv, "\xC0"sv, "\xC1"sv, "\xF5"sv, "\xF8"sv, "\x80"sv,
        "\xBF"sv, "a\x80\x80\x80"sv, "\x80\x80\x80\x80"sv}) {
    utf8_splitter splitter;
    CAF_CHECK_EQUAL(splitter.feed(bad), bad);
    CAF_CHECK(splitter.empty());
  }
  // Leads whose second byte already rules out a valid sequence: overlong
  // (E0 80, F0 80), surrogate (ED A0), above U+10FFFF (F4 90).
  for (auto bad : {"\xE0\x80"sv, "\xF0\x80"sv, "\xED\xA0"sv, "\xF4\x90"sv,
                   "\xF0\x8F\xBF"sv, "\xC3\x41"sv}) {
    utf8_splitter splitter;
    CAF_CHECK_EQUAL(splitter.feed(bad), bad);
    CAF_CHECK(splitter.empty());
  }
  // An invalid lead followed by ASCII passes at once.
  utf8_splitter splitter;
  CAF_CHECK_EQUAL(splitter.feed("\xC0"), "\xC0");
  CAF_CHECK_EQUAL(splitter.feed("abc"), "abc");
}

CAF_TEST(S8 complete sequences at the end are not held) {
  for (auto ok : {"a"sv, "\xC3\xA9"sv, "\xE2\x82\xAC"sv, "\xF0\x9F\x98\x80"sv,
                  "\xF0\x9F\x98\x80\xC3\xA9"sv}) {
    utf8_splitter splitter;
    CAF_CHECK_EQUAL(splitter.feed(ok), ok);
    CAF_CHECK(splitter.empty());
  }
}

CAF_TEST(S8 feed_into appends after what the buffer held) {
  utf8_splitter splitter;
  std::string out = "keep:";
  splitter.feed_into("x\xF0\x9F", out);
  CAF_CHECK_EQUAL(out, "keep:x");
  splitter.feed_into("\x98\x80y", out);
  CAF_CHECK_EQUAL(out, "keep:x\xF0\x9F\x98\x80y");
  splitter.feed_into("\xC3", out);
  splitter.flush_into(out);
  CAF_CHECK_EQUAL(out, "keep:x\xF0\x9F\x98\x80y\xC3");
}

CAF_TEST(S8 random binary round - trips byte - exact under random splits) {
  std::mt19937 rng{20240601};
  for (int round = 0; round < 300; ++round) {
    // Mix plain bytes with bytes that look like UTF-8 leads.
    std::string input(std::uniform_int_distribution<size_t>{0, 600}(rng), '\0');
    for (auto& c : input)
      c = static_cast<char>(std::uniform_int_distribution<int>{0, 255}(rng));
    std::vector<std::string_view> pieces;
    std::string_view rest{input};
    while (!rest.empty()) {
      auto n = std::uniform_int_distribution<size_t>{0, 9}(rng);
      n = std::min(n, rest.size());
      pieces.push_back(rest.substr(0, n));
      rest.remove_prefix(n);
    }
    auto outputs = split(pieces);
    CAF_CHECK_EQUAL(concat(outputs), input);
  }
}

CAF_TEST(S8 feed_in_place gives what feed gives under random splits) {
  std::mt19937 rng{20261202};
  for (int round = 0; round < 300; ++round) {
    std::string input(std::uniform_int_distribution<size_t>{0, 400}(rng), '\0');
    for (auto& c : input)
      c = static_cast<char>(std::uniform_int_distribution<int>{0, 255}(rng));
    utf8_splitter copying;
    utf8_splitter in_place;
    std::string_view rest{input};
    while (!rest.empty()) {
      auto n = std::min(std::uniform_int_distribution<size_t>{0, 9}(rng),
                        rest.size());
      std::string piece{rest.substr(0, n)};
      rest.remove_prefix(n);
      auto expected = copying.feed(piece);
      in_place.feed_in_place(piece);
      CAF_CHECK_EQUAL(piece, expected);
    }
    CAF_CHECK_EQUAL(in_place.flush(), copying.flush());
  }
}

CAF_TEST(S8 valid UTF - 8 under random splits yields only valid chunks) {
  // Characters of every length, including the edges of each range.
  const std::vector<std::string> chars{"a",
                                       "\x7F",
                                       "\xC2\x80",
                                       "\xDF\xBF",
                                       "\xC3\xA9",
                                       "\xE0\xA0\x80",
                                       "\xE2\x82\xAC",
                                       "\xED\x9F\xBF",
                                       "\xEE\x80\x80",
                                       "\xEF\xBF\xBF",
                                       "\xF0\x90\x80\x80",
                                       "\xF0\x9F\x98\x80",
                                       "\xF4\x8F\xBF\xBF",
                                       "\n"};
  std::mt19937 rng{7};
  for (int round = 0; round < 300; ++round) {
    std::string input;
    auto count = std::uniform_int_distribution<size_t>{0, 200}(rng);
    for (size_t i = 0; i < count; ++i)
      input += chars[std::uniform_int_distribution<size_t>{0, chars.size()
                                                                - 1}(rng)];
    CAF_REQUIRE(is_valid_utf8(input));
    std::vector<std::string_view> pieces;
    std::string_view rest{input};
    while (!rest.empty()) {
      auto n = std::uniform_int_distribution<size_t>{1, 7}(rng);
      n = std::min(n, rest.size());
      pieces.push_back(rest.substr(0, n));
      rest.remove_prefix(n);
    }
    auto outputs = split(pieces);
    CAF_CHECK_EQUAL(concat(outputs), input);
    // Every chunk is valid UTF-8 on its own: none ends (or starts) inside
    // a sequence.
    for (const auto& out : outputs)
      CAF_CHECK(is_valid_utf8(out));
    CAF_CHECK_EQUAL(outputs.back(), "");
  }
}

CAF_TEST(S8 the incomplete tail is measured strictly) {
  using sandbox::utf8_incomplete_tail;
  CAF_CHECK_EQUAL(utf8_incomplete_tail(""), 0u);
  CAF_CHECK_EQUAL(utf8_incomplete_tail("abc"), 0u);
  CAF_CHECK_EQUAL(utf8_incomplete_tail("\xC3"), 1u);
  CAF_CHECK_EQUAL(utf8_incomplete_tail("\xE2\x82"), 2u);
  CAF_CHECK_EQUAL(utf8_incomplete_tail("\xF0\x9F\x98"), 3u);
  CAF_CHECK_EQUAL(utf8_incomplete_tail("\xF0\x9F\x98\x80"), 0u);
  CAF_CHECK_EQUAL(utf8_incomplete_tail("\xE0\x9F"), 0u);
  CAF_CHECK_EQUAL(utf8_incomplete_tail("\xF4\x8F"), 2u);
  CAF_CHECK_EQUAL(utf8_incomplete_tail("\xF4\x90"), 0u);
}

CAF_TEST(S8 no chunk of a mixed stream ends inside a valid sequence) {
  // Bytes drawn mostly from lead and continuation ranges so that valid and
  // broken sequences alternate densely.
  std::mt19937 rng{42};
  auto random_byte = [&rng] {
    switch (std::uniform_int_distribution<int>{0, 3}(rng)) {
      case 0:
        return std::uniform_int_distribution<int>{0x20, 0x7E}(rng);
      case 1:
        return std::uniform_int_distribution<int>{0xC2, 0xF4}(rng);
      case 2:
        return std::uniform_int_distribution<int>{0x80, 0xBF}(rng);
      default:
        return std::uniform_int_distribution<int>{0x00, 0xFF}(rng);
    }
  };
  for (int round = 0; round < 500; ++round) {
    std::string input(std::uniform_int_distribution<size_t>{0, 300}(rng), '\0');
    for (auto& c : input)
      c = static_cast<char>(random_byte());
    utf8_splitter splitter;
    std::string_view rest{input};
    std::string joined;
    std::vector<size_t> boundaries;
    while (!rest.empty()) {
      auto n = std::min(std::uniform_int_distribution<size_t>{1, 6}(rng),
                        rest.size());
      auto out = splitter.feed(rest.substr(0, n));
      rest.remove_prefix(n);
      if (!out.empty()) {
        joined += out;
        boundaries.push_back(joined.size());
      }
    }
    joined += splitter.flush();
    CAF_CHECK_EQUAL(joined, input);
    // No valid multi-byte character may straddle a chunk boundary.
    for (auto p : boundaries) {
      for (size_t start = p >= 3 ? p - 3 : 0; start < p; ++start) {
        for (size_t len = 2; len <= 4; ++len) {
          if (start + len <= p || start + len > joined.size())
            continue;
          auto seq = std::string_view{joined}.substr(start, len);
          auto lead = static_cast<unsigned char>(seq[0]);
          auto lead_len = lead >= 0xF0 ? 4u : lead >= 0xE0 ? 3u : 2u;
          if (lead >= 0xC0 && lead_len == len && is_valid_utf8(seq))
            CAF_FAIL("a valid sequence straddles the chunk boundary at "
                     << p << " of round " << round);
        }
      }
    }
  }
}
