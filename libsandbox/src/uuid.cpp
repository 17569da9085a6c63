#include "sandbox/uuid.hpp"

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <system_error>

#include <sys/random.h>

namespace sandbox {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

// Offsets of the four dashes in the canonical 8-4-4-4-12 form.
constexpr bool is_dash_position(size_t i) noexcept {
  return i == 8 || i == 13 || i == 18 || i == 23;
}

void fill_random(std::array<uint8_t, 16>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    // Requests of up to 256 bytes are never cut short once the pool is
    // initialized, but a signal before the first byte gives EINTR: retry.
    auto n = ::getrandom(bytes.data() + done, bytes.size() - done, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw std::system_error{errno, std::generic_category(), "getrandom"};
    }
    done += static_cast<size_t>(n);
  }
}

} // namespace

std::string make_uuid_v4() {
  std::array<uint8_t, 16> bytes;
  fill_random(bytes);
  // RFC 4122 §4.4: version 4 in the high nibble of byte 6, variant 10xx in
  // the top bits of byte 8.
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0F) | 0x40);
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3F) | 0x80);
  std::string result;
  result.reserve(36);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      result += '-';
    result += hex_digits[bytes[i] >> 4];
    result += hex_digits[bytes[i] & 0x0F];
  }
  return result;
}

bool is_uuid(std::string_view str) noexcept {
  if (str.size() != 36)
    return false;
  for (size_t i = 0; i < str.size(); ++i) {
    auto c = str[i];
    if (is_dash_position(i)) {
      if (c != '-')
        return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

} // namespace sandbox
