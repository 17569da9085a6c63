#include "sandbox/net/endpoint.hpp"

#include <fmt/format.h>

#include "sandbox/validation.hpp"

namespace sandbox {

namespace {

// A URI scheme (RFC 3986 §3.1), restricted to lowercase: the canonical form.
bool is_lowercase_scheme(std::string_view str) noexcept {
  if (str.empty() || str[0] < 'a' || str[0] > 'z')
    return false;
  for (auto c : str.substr(1)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+'
              || c == '.' || c == '-';
    if (!ok)
      return false;
  }
  return true;
}

} // namespace

result<std::string> port_endpoint(uint16_t port, std::string_view protocol) {
  if (!is_lowercase_scheme(protocol))
    return error{errc::invalid_argument,
                 fmt::format("invalid protocol {}: expected a lowercase URI "
                             "scheme matching ^[a-z][a-z0-9+.-]*$",
                             quote_for_message(protocol))};
  return fmt::format("{}://127.0.0.1:{}", protocol, port);
}

} // namespace sandbox
