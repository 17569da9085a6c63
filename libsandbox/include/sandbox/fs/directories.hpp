#pragma once

#include <string>

#include <sys/types.h>

#include "sandbox/errc.hpp"

namespace sandbox::fs {

/// Creates the directory `path` and every missing parent, as `mkdir -p`
/// does. Directories it creates get `mode` minus the process umask;
/// existing ones are left as they are. An existing directory (or a symlink
/// to one) at `path` is success.
///
/// Errors (each message names the component that failed):
/// - `invalid_argument`: empty path or a path containing NUL.
/// - `path_not_found`: a component exists but is not a directory
///   ("Not a directory"), `path` included.
/// - `permission_denied`: a parent may not be searched or written.
/// - `io_error`: any other failure of mkdir (e.g. no space left).
result<void> make_directories(const std::string& path, mode_t mode = 0777);

} // namespace sandbox::fs
