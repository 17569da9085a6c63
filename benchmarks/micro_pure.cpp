// Micro-benchmarks of the pure helpers of libsandbox: validation, UTF-8
// chunking (§8) and output capping (§9). Each byte-oriented benchmark
// reports bytes per second; `BM_memcpy_baseline` copies the same 64 KiB so
// the figures read as a ratio against a raw copy measured in the same run.

#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "sandbox/execution.hpp"
#include "sandbox/output/capped_output.hpp"
#include "sandbox/output/utf8_splitter.hpp"
#include "sandbox/validation.hpp"

namespace {

constexpr size_t chunk_size = 64 * 1024;

/// Returns `n` bytes of mixed UTF-8: ASCII with 2-, 3- and 4-byte
/// characters, so that chunk boundaries fall inside sequences.
std::string mixed_utf8(size_t n) {
  const std::string unit = "log line: caf\xC3\xA9 \xE2\x82\xAC 42 "
                           "\xF0\x9F\x98\x80 done\n";
  std::string out;
  while (out.size() < n)
    out += unit;
  out.resize(n);
  return out;
}

void BM_memcpy_baseline(benchmark::State& state) {
  auto src = mixed_utf8(chunk_size);
  std::string dst(chunk_size, '\0');
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), chunk_size);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * chunk_size);
}
BENCHMARK(BM_memcpy_baseline);

void BM_is_valid_env_name(benchmark::State& state) {
  const std::vector<std::string> names{
    "PATH", "HOME", "LD_LIBRARY_PATH", "_private_9", "BAD-NAME", "1BAD"};
  for (auto _ : state) {
    for (const auto& name : names) {
      auto ok = sandbox::is_valid_env_name(name);
      benchmark::DoNotOptimize(ok);
    }
  }
  state.SetItemsProcessed(state.iterations() * names.size());
}
BENCHMARK(BM_is_valid_env_name);

void BM_utf8_splitter_feed_64k(benchmark::State& state) {
  // Offset every other chunk by one byte so that most chunks end inside a
  // multi-byte sequence and the carry is exercised.
  auto data = mixed_utf8(chunk_size + 1);
  std::string_view even{data.data(), chunk_size};
  std::string_view odd{data.data() + 1, chunk_size};
  sandbox::utf8_splitter splitter;
  std::string out;
  bool flip = false;
  for (auto _ : state) {
    out.clear();
    splitter.feed_into(flip ? odd : even, out);
    flip = !flip;
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * chunk_size);
}
BENCHMARK(BM_utf8_splitter_feed_64k);

void BM_capped_output_append_64k(benchmark::State& state) {
  auto piece = mixed_utf8(chunk_size);
  sandbox::capped_output out{sandbox::default_output_cap};
  for (auto _ : state) {
    out.append(piece);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * chunk_size);
  state.counters["retained_MiB"] = static_cast<double>(out.retained_capacity())
                                   / (1 << 20);
}
BENCHMARK(BM_capped_output_append_64k);

} // namespace
