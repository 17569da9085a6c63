#define CAF_SUITE actors.filesystem_stream
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"
#include "helpers/scale.hpp"

#include <atomic>
#include <cstring>
#include <thread>

#include "filesystem_fixture.hpp"

using sandbox::errc;
using sandbox::resident_bytes;
namespace actors = sandbox::actors;

namespace {

constexpr size_t mib = 1024 * 1024;

/// Stamps the chunk index into the first bytes of `chunk`, so that chunks
/// out of order or lost show up when reading back.
void stamp(std::string& chunk, uint64_t index) {
  std::memcpy(chunk.data(), &index, sizeof(index));
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(filesystem_stream_tests, sandbox::test::files_fixture)

// 256 MiB per commit, 2 GiB in `make test-stress`: either is four times
// the bound or more.
CAF_TEST(S12 S13 a large file streams in and out in bounded memory) {
  SANDBOX_SKIP_MEMORY_TEST_IF_SANITIZED();
  const uint64_t chunks = sandbox::test::sized<uint64_t>(256, 2048);
  const uint64_t total = chunks * mib;
  // One pattern buffer, stamped per chunk: nothing of size `total` is ever
  // held by the test either.
  std::string pattern(mib, '\0');
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<char>(i * 7 + 3);
  auto before = resident_bytes();
  size_t peak = before;
  auto w = files.open_write("huge.bin");
  CAF_REQUIRE(w.has_value());
  for (uint64_t i = 0; i < chunks; ++i) {
    auto chunk = pattern;
    stamp(chunk, i);
    auto ok = w->write(std::move(chunk));
    if (!ok)
      CAF_FAIL("write of chunk " << i << " failed: " << ok.error().message);
    if (i % 64 == 0)
      peak = std::max(peak, resident_bytes());
  }
  CAF_REQUIRE(w->commit().has_value());
  CAF_CHECK_EQUAL(w->bytes(), total);
  CAF_CHECK_EQUAL(files.stat("huge.bin").value().size, total);
  // Read it back by stream and compare against the pattern as it comes.
  uint64_t offset = 0;
  uint64_t mismatches = 0;
  uint64_t calls = 0;
  auto expect = pattern;
  auto got = files.read_stream(
    "huge.bin",
    [&](const std::string& chunk) {
      std::string_view rest = chunk;
      while (!rest.empty()) {
        auto index = offset / mib;
        auto in_chunk = offset % mib;
        expect = pattern;
        stamp(expect, index);
        auto n = std::min<size_t>(rest.size(), mib - in_chunk);
        if (std::memcmp(rest.data(), expect.data() + in_chunk, n) != 0)
          ++mismatches;
        rest.remove_prefix(n);
        offset += n;
      }
      if (++calls % 64 == 0)
        peak = std::max(peak, resident_bytes());
      return true;
    },
    static_cast<uint32_t>(mib));
  peak = std::max(peak, resident_bytes());
  CAF_CHECK_EQUAL(got.value(), total);
  CAF_CHECK_EQUAL(offset, total);
  CAF_CHECK_EQUAL(mismatches, 0u);
  auto growth = peak > before ? peak - before : 0;
  CAF_MESSAGE("resident memory grew by " << growth / 1024 << " KiB");
  SANDBOX_CHECK_MEMORY_BOUND(growth, 64 * mib);
  CAF_CHECK(files.remove_file("huge.bin").has_value());
}

CAF_TEST(S13 a reader racing a writer sees the old or the new content) {
  // The writer and the reader use two sessions in one directory, so two
  // workers on two threads really race. Every streamed write takes several
  // chunks (several messages), so a torn file would be visible if the
  // writer wrote in place.
  const std::string a(300000, 'a');
  const std::string b(200000, 'b');
  CAF_REQUIRE(files.write_file("race", a).has_value());
  auto other = make_session();
  auto reader = unwrap(actors::files_of(other));
  std::atomic<bool> writing{true};
  std::atomic<int> failures{0};
  std::thread writer{[&] {
    for (int i = 0; i < 200; ++i) {
      auto& content = i % 2 == 0 ? b : a;
      auto w = files.open_write("race");
      if (!w) {
        ++failures;
        continue;
      }
      for (size_t pos = 0; pos < content.size(); pos += 50000)
        if (!w->write(content.substr(pos, 50000)))
          ++failures;
      if (!w->commit())
        ++failures;
    }
    writing = false;
  }};
  size_t reads = 0;
  size_t torn = 0;
  size_t errors = 0;
  // Read while the writer runs, and at least a few times in any case.
  while (writing || reads < 20) {
    auto r = reader.read_file("race");
    if (!r)
      ++errors;
    else if (*r != a && *r != b)
      ++torn;
    std::string streamed;
    auto s = reader.read_stream("race", [&](const std::string& c) {
      streamed += c;
      return true;
    });
    if (!s)
      ++errors;
    else if (streamed != a && streamed != b)
      ++torn;
    reads += 2;
  }
  writer.join();
  CAF_MESSAGE(reads << " reads raced 200 writes");
  CAF_CHECK_EQUAL(failures.load(), 0);
  CAF_CHECK_EQUAL(errors, 0u);
  CAF_CHECK_EQUAL(torn, 0u);
  CAF_CHECK_EQUAL(sandbox::test::temp_files_in(wd), 0u);
}

CAF_TEST_FIXTURE_SCOPE_END()
