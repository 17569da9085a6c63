#pragma once

#include <string>
#include <string_view>

#include "sandbox/errc.hpp"

namespace sandbox::fs {

/// Resolves `path` against `base_dir` and normalises the result lexically.
///
/// A relative `path` is joined to `base_dir`; an absolute one replaces it.
/// Normalisation is purely textual: repeated slashes and `.` components are
/// dropped, `..` removes the component before it (at the root it stays at
/// the root), and a trailing slash is removed. Symlinks are not consulted,
/// so `a/link/..` becomes `a` even when `link` points elsewhere. An empty
/// `path` yields `base_dir` itself. When both inputs are relative the result
/// is relative too, keeping leading `..` components, and `.` when empty.
///
/// Never fails; call `validate_path` first to reject unusable input.
std::string resolve(std::string_view base_dir, std::string_view path);

/// Checks that `path` can be handed to the operating system.
///
/// Errors:
/// - `invalid_argument`: the path is empty or contains a NUL byte (which
///   would silently cut the path short at the system-call boundary).
result<void> validate_path(std::string_view path);

} // namespace sandbox::fs
