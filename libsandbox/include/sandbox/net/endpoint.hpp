#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sandbox/errc.hpp"

namespace sandbox {

/// Returns the URL at which a session's server on `port` is reached:
/// `<protocol>://127.0.0.1:<port>` (§19), e.g. "http://127.0.0.1:20417".
/// As the systems we match, it accepts any port number and does not check
/// that the port is leased or that anything listens on it. Thread-safe.
/// @returns `errc::invalid_argument` naming the protocol when `protocol` is
///          not a URI scheme in lowercase, i.e. does not match
///          `^[a-z][a-z0-9+.-]*$` (so "HTTP", "", "http://" and "h ttp" are
///          refused rather than producing a malformed URL). The message
///          quotes the protocol as `quote_for_message` does (control and
///          non-ASCII bytes as `\xNN`).
result<std::string> port_endpoint(uint16_t port,
                                  std::string_view protocol = "http");

} // namespace sandbox
