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

/// As `resolve`, but keeps what the end of `path` says about the kind of
/// file it names. POSIX path resolution requires the file before a trailing
/// slash to be a directory (following a final symlink to one), and so does
/// a final `.` or `..`. When `path` ends in `/`, `/.` or `/..` (or is `.`
/// or `..`), the result ends in `/` (unless it is the root itself), so that
/// `stat("f/")` of a file fails with "Not a directory" and `lstat("link/")`
/// reports the directory a symlink points to.
///
/// The file operations of a session resolve their paths with this.
std::string resolve_keeping_slash(std::string_view base_dir,
                                  std::string_view path);

/// True when `path` ends in `/`, `/.` or `/..`, or is `.` or `..`: it can
/// only name a directory.
bool names_directory(std::string_view path) noexcept;

/// Checks that `path` can be handed to the operating system.
///
/// Errors:
/// - `invalid_argument`: the path is empty or contains a NUL byte (which
///   would silently cut the path short at the system-call boundary).
result<void> validate_path(std::string_view path);

} // namespace sandbox::fs
