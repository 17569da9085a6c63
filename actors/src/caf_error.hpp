#pragma once

// Conversions from sandbox errors to CAF errors, shared by the actors'
// sources (private header).

#include <string_view>

#include <caf/error.hpp>

#include <fmt/format.h>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/errc.hpp"

namespace sandbox::actors {

/// The CAF form of `e`: the same code in the `sandbox` category, the same
/// message; it crosses the network intact.
inline caf::error to_caf(const sandbox::error& e) {
  return caf::make_error(e.code, e.message);
}

/// `session_stopped` for the request `what` (e.g. "write #3"): "what: the
/// session is stopped".
inline caf::error stopped_error(std::string_view what) {
  return caf::make_error(errc::session_stopped,
                         fmt::format("{}: the session is stopped", what));
}

} // namespace sandbox::actors
