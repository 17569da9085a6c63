#pragma once

#include <caf/error.hpp>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/errc.hpp"

namespace sandbox::actors {

/// Converts a domain error into a CAF error of the `sandbox` category, code
/// and message preserved.
inline caf::error to_caf(const sandbox::error& e) {
  return caf::make_error(e.code, e.message);
}

} // namespace sandbox::actors
