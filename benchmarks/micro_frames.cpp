// Micro-benchmarks of frame encoding: the CAF binary serialization of the
// messages that cross the network for every execution (protocol.hpp's
// `inspect()` of `sandbox::output_chunk` and `sandbox::exec_result`). Each
// reports bytes per second of payload; `BM_memcpy_baseline` (micro_pure.cpp,
// same binary) copies 64 KiB, so a chunk's figures read as a ratio against
// a raw copy measured in the same run.

#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "sandbox/actors/protocol.hpp"

namespace {

/// One read of the reactor (child_process::read_size).
constexpr size_t chunk_bytes = 64 * 1024;

std::string payload(size_t n) {
  std::string out;
  out.reserve(n);
  while (out.size() < n)
    out += "make[2]: building target 42 of 1337 ... ok\n";
  out.resize(n);
  return out;
}

sandbox::output_chunk make_chunk(size_t n) {
  return sandbox::output_chunk{sandbox::stream_kind::out, payload(n)};
}

sandbox::exec_result make_result(size_t stdout_bytes) {
  sandbox::exec_result r;
  r.exit_code = 2;
  r.reason = sandbox::exit_reason::exited;
  r.stdout_data = payload(stdout_bytes);
  r.stderr_data = "error: something failed\n";
  r.truncated = stdout_bytes > 1024;
  r.dropped_bytes = 12345;
  return r;
}

template <class T>
size_t payload_size(const T& x);

template <>
size_t payload_size(const sandbox::output_chunk& x) {
  return x.data.size();
}

template <>
size_t payload_size(const sandbox::exec_result& x) {
  return x.stdout_data.size() + x.stderr_data.size();
}

/// Encodes `x` into a reused buffer, as a node does for every message.
template <class T>
void encode(benchmark::State& state, T x) {
  std::vector<char> buf;
  for (auto _ : state) {
    buf.clear();
    caf::binary_serializer sink{nullptr, buf};
    if (auto err = sink(x)) {
      state.SkipWithError("serialization failed");
      break;
    }
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetBytesProcessed(
    static_cast<int64_t>(state.iterations() * payload_size(x)));
  state.counters["frame_bytes"] = static_cast<double>(buf.size());
}

/// Decodes an encoded `x`, as the receiving side does.
template <class T>
void decode(benchmark::State& state, T x) {
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  if (auto err = sink(x)) {
    state.SkipWithError("serialization failed");
    return;
  }
  for (auto _ : state) {
    T y;
    caf::binary_deserializer source{nullptr, buf};
    if (auto err = source(y)) {
      state.SkipWithError("deserialization failed");
      break;
    }
    benchmark::DoNotOptimize(y);
  }
  state.SetBytesProcessed(
    static_cast<int64_t>(state.iterations() * payload_size(x)));
}

void BM_encode_output_chunk_64k(benchmark::State& state) {
  encode(state, make_chunk(chunk_bytes));
}
BENCHMARK(BM_encode_output_chunk_64k);

void BM_decode_output_chunk_64k(benchmark::State& state) {
  decode(state, make_chunk(chunk_bytes));
}
BENCHMARK(BM_decode_output_chunk_64k);

void BM_encode_output_chunk_small(benchmark::State& state) {
  encode(state, make_chunk(80));
}
BENCHMARK(BM_encode_output_chunk_small);

void BM_encode_exec_result_small(benchmark::State& state) {
  encode(state, make_result(80));
}
BENCHMARK(BM_encode_exec_result_small);

void BM_decode_exec_result_small(benchmark::State& state) {
  decode(state, make_result(80));
}
BENCHMARK(BM_decode_exec_result_small);

/// A result at the default retention cap (§9: 16 MiB per stream).
void BM_encode_exec_result_16m(benchmark::State& state) {
  encode(state, make_result(sandbox::default_output_cap));
}
BENCHMARK(BM_encode_exec_result_16m)->Unit(benchmark::kMillisecond);

void BM_decode_exec_result_16m(benchmark::State& state) {
  decode(state, make_result(sandbox::default_output_cap));
}
BENCHMARK(BM_decode_exec_result_16m)->Unit(benchmark::kMillisecond);

} // namespace
