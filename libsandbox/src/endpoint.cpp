#include "sandbox/endpoint.hpp"

#include <fmt/format.h>

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

// Quotes `str` for an error message, escaping quotes, backslashes and
// non-printable bytes, so the message stays one printable line.
std::string quoted(std::string_view str) {
  std::string result = "\"";
  for (auto c : str) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      result += '\\';
      result += c;
    } else if (c == '\n') {
      result += "\\n";
    } else if (c == '\t') {
      result += "\\t";
    } else if (byte < 0x20 || byte >= 0x7F) {
      result += fmt::format("\\x{:02x}", byte);
    } else {
      result += c;
    }
  }
  result += '"';
  return result;
}

} // namespace

result<std::string> port_endpoint(uint16_t port, std::string_view protocol) {
  if (!is_lowercase_scheme(protocol))
    return error{errc::invalid_argument,
                 fmt::format("invalid protocol {}: expected a lowercase URI "
                             "scheme matching ^[a-z][a-z0-9+.-]*$",
                             quoted(protocol))};
  return fmt::format("{}://127.0.0.1:{}", protocol, port);
}

} // namespace sandbox
