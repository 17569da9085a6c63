// http.wire: the one-pass NDJSON chunk line of the streaming paths says
// exactly what the general JSON shape says, for any bytes.

#define CAF_SUITE http.wire
#include "caf/test/dsl.hpp"

#include <random>

#include "helpers/check.hpp"
#include "wire/json.hpp"

using namespace sandbox;

namespace {

std::string random_bytes(std::mt19937& rng) {
  static const std::vector<std::string> pieces{
    "a",        "\n", "\t", "\"",   "\\",   "\x01",     "\x7f",
    "é",        "€",  "𝄞",  "\xff", "\xc3", "\xe2\x82", "\xed\xa0\x80",
    "\xc0\xaf", " ",  "/"};
  std::string s;
  auto n = rng() % 40;
  for (size_t i = 0; i < n; ++i)
    s += rng() % 3 == 0 ? std::string(1, static_cast<char>(rng()))
                        : pieces[rng() % pieces.size()];
  return s;
}

} // namespace

CAF_TEST(chunk lines parse to the chunk objects for any bytes) {
  auto seed = std::random_device{}();
  CAF_MESSAGE("seed " << seed);
  std::mt19937 rng{seed};
  for (int i = 0; i < 20000; ++i) {
    output_chunk c{i % 2 == 0 ? stream_kind::out : stream_kind::err,
                   random_bytes(rng)};
    auto line = wire::chunk_line(c);
    REQUIRE_THAT(!line.empty() && line.back() == '\n', "no newline: " << line);
    auto parsed = nlohmann::ordered_json::parse(line.substr(0, line.size() - 1),
                                                nullptr, false);
    REQUIRE_THAT(!parsed.is_discarded(), "not JSON: " << line);
    auto expected = wire::chunk_json(c);
    REQUIRE_THAT(parsed == expected,
                 "differs: " << line << " vs " << wire::line(expected));
    // What the client decodes is the bytes.
    std::string back;
    if (parsed.contains("data"))
      back = parsed["data"].get<std::string>();
    else
      REQUIRE_THAT(wire::from_base64(parsed["data_b64"].get<std::string>(),
                                     back),
                   "bad base64");
    REQUIRE_THAT(back == c.data, "bytes differ for " << line);
  }
}
