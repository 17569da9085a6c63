#pragma once

#include <string_view>

namespace sandbox::http {

/// docs/openapi.yaml as JSON (generated at build time).
std::string_view openapi_json();

} // namespace sandbox::http
