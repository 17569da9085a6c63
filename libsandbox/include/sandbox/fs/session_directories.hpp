#pragma once

#include <string>
#include <string_view>

#include "sandbox/errc.hpp"

namespace sandbox {

/// Mode of the directories a session creates for its working directory and
/// an explicit home (before the umask).
constexpr unsigned session_directory_mode = 0755;

/// Mode of the per-user directory that holds the default home, and of the
/// default home itself: nobody else may enter them.
constexpr unsigned private_directory_mode = 0700;

/// Returns the current directory.
/// @returns `io_error` (or the errno's code) naming getcwd when it fails,
///          e.g. because the directory was removed.
result<std::string> current_directory();

/// Creates `path` and its missing parents (`mkdir -p`, mode
/// `session_directory_mode`) and checks that it is a directory. `what`
/// names the path in messages, e.g. "working directory".
/// @returns the path on success.
/// @returns `invalid_argument` when `path` is empty; otherwise the errno's
///          code naming the component that could not be created:
///          `path_not_found` also when a component exists but is not a
///          directory, `permission_denied`, `io_error`.
result<std::string> make_directories(std::string path, std::string_view what);

/// Returns the private directory of this user under `temp_directory`:
/// `<temp_directory>/sandbox-<euid>`, made ready by `make_private_directory`.
std::string user_directory(std::string_view temp_directory);

/// Returns the default home of the sessions of this user under
/// `temp_directory`: `<temp_directory>/sandbox-<euid>/home`.
std::string default_home(std::string_view temp_directory);

/// Makes `path` a private directory of the effective user: created with
/// mode `private_directory_mode` when missing (its parent must exist), then
/// checked with lstat to be a real directory (not a symlink, never followed)
/// owned by the effective user with no access for group or others. Used for
/// the per-user directory `<temp_directory>/sandbox-<euid>` by every part
/// that puts something there (the default home, `sandbox serve`'s default
/// base directory).
/// @returns `permission_denied` naming the path when a check fails
///          (`refusing PATH: it is a symlink, not a directory of its own`,
///          another owner, a mode that lets others in), the errno's code
///          naming the path when it cannot be created or inspected.
result<void> make_private_directory(const std::string& path);

/// Makes the default home `home` (as returned by `default_home`) ready for
/// use: its parent (the per-user directory) and `home` itself are created
/// as by `make_private_directory`. Nothing is ever created through a
/// symlink another user planted.
/// @returns `permission_denied` naming the path when a check fails (a
///          symlink, another owner, a mode that lets others in), the
///          errno's code naming the path when it cannot be created (e.g. a
///          missing or read-only temp directory).
result<void> make_private_home(const std::string& home);

} // namespace sandbox
