#pragma once

// Bytes whose value tells their position, for tests of output buffers
// and of output read back from a process.

#include <cstddef>
#include <cstdint>
#include <string>

namespace sandbox::test {

/// `n` bytes counting up from `first` modulo 251 (a prime, so no power of
/// two lines up with it): any byte read shows where in a long stream it
/// came from.
inline std::string byte_pattern(uint64_t first, size_t n) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<char>((first + i) % 251);
  return out;
}

/// What `seq first last` prints: "first\n" to "last\n".
inline std::string numbered_lines(uint64_t first, uint64_t last) {
  std::string out;
  for (auto i = first; i <= last; ++i)
    out += std::to_string(i) + "\n";
  return out;
}

} // namespace sandbox::test
