#include "sandbox/uuid.hpp"

#include <cstddef>
#include <system_error>

#include <boost/uuid/entropy_error.hpp>
#include <boost/uuid/random_generator.hpp>
#include <boost/uuid/uuid_io.hpp>

namespace sandbox {

namespace {

// Offsets of the four dashes in the canonical 8-4-4-4-12 form.
constexpr bool is_dash_position(size_t i) noexcept {
  return i == 8 || i == 13 || i == 18 || i == 23;
}

} // namespace

std::string make_uuid_v4() {
  // Boost's generator reads the kernel's random source (getrandom(2)) for
  // every id, retrying on EINTR, and sets the version and variant bits;
  // to_string writes the lowercase canonical form.
  try {
    boost::uuids::random_generator generate;
    return boost::uuids::to_string(generate());
  } catch (const boost::uuids::entropy_error& e) {
    throw std::system_error{static_cast<int>(e.errcode()),
                            std::generic_category(), e.what()};
  }
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
