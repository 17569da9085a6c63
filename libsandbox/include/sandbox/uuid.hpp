#pragma once

#include <string>
#include <string_view>

namespace sandbox {

/// Returns a fresh random UUID (RFC 4122 version 4) in lowercase canonical
/// form, e.g. "3f2b8c1e-7d4a-4e0f-9b6c-2a1d5e8f7c90"; session ids use it
/// (§18). The 122 random bits come from the kernel CSPRNG (getrandom(2),
/// through Boost.Uuid), so ids are unpredictable and never repeat in
/// practice. Thread-safe.
/// @throws std::system_error only if the kernel offers no getrandom(2)
///         (Linux older than 3.17); there is nothing a caller can retry.
std::string make_uuid_v4();

/// Checks whether `str` is a UUID in lowercase canonical form: 36 characters,
/// lowercase hex digits in groups of 8-4-4-4-12 separated by '-'. Any version
/// and variant is accepted; uppercase digits, braces and "urn:uuid:" are not,
/// because ids are compared as strings and `make_uuid_v4` never makes them.
bool is_uuid(std::string_view str) noexcept;

} // namespace sandbox
