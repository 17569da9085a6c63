#pragma once

// Test data shared by the benchmarks: bytes that are not all zero, so
// that nothing can elide their writing or copying.

#include <cstddef>
#include <cstdint>
#include <string>

namespace sandbox::bench {

/// `size` bytes of a xorshift sequence (the same bytes every time).
inline std::string make_payload(size_t size) {
  std::string data(size, '\0');
  uint32_t x = 2463534242u;
  for (auto& c : data) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return data;
}

} // namespace sandbox::bench
