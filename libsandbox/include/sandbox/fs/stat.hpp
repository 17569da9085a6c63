#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <sys/stat.h>

#include "sandbox/errc.hpp"

namespace sandbox::fs {

/// What a path names, without following a final symlink.
enum class file_kind : uint8_t {
  /// A regular file.
  file,
  /// A directory.
  dir,
  /// A symbolic link (never followed by `stat_path` or the tree walker).
  symlink,
  /// A FIFO, socket, character or block device.
  other,
};

/// Returns "file", "dir", "symlink" or "other" (the names of the CLI and the
/// wire format).
std::string_view to_string(file_kind x) noexcept;

/// Classifies the file-type bits of a `st_mode`.
file_kind kind_of(mode_t mode) noexcept;

/// Metadata of one path (§17).
struct file_stat {
  file_kind kind = file_kind::other;
  /// Bytes of a file; the target length of a symlink; as reported for others.
  uint64_t size = 0;
  /// Last modification, nanoseconds since the Unix epoch.
  int64_t mtime_ns = 0;
  uint64_t dev = 0;
  uint64_t ino = 0;
  /// Change token: 16 lowercase hex digits (see `version_of`).
  std::string version;
};

/// Computes the change token of a `struct stat`.
///
/// The token is a 64-bit FNV-1a digest of device, inode, size, mtime and
/// ctime at nanosecond resolution, plus mode, owner and link count. It is
/// stable while nothing changes; a changed token is evidence of change.
/// Content and metadata changes (chmod included) update ctime and so the
/// token; mode and owner are hashed as well so that a chmod or chown shows
/// even within one tick of the file system's timestamp clock. Limit: an
/// in-place rewrite that keeps the size and lands in the same timestamp tick
/// as the previous change is invisible (as for `make` and git's "racily
/// clean" files). Replacing writes (`atomic_writer`) always produce a new
/// inode and therefore a new token.
std::string version_of(const struct ::stat& st);

/// Builds a `file_stat` (version included) from a `struct stat`.
file_stat to_file_stat(const struct ::stat& st);

/// Returns the metadata of `abs` itself: a symlink is reported as
/// `file_kind::symlink`, not followed (lstat semantics).
///
/// Errors:
/// - `invalid_argument`: empty path or a path containing NUL.
/// - `path_not_found`: `abs` or one of its parents does not exist, or a
///   parent is not a directory.
/// - `permission_denied`: a parent directory may not be searched.
/// - `io_error`: any other failure of lstat.
result<file_stat> stat_path(const std::string& abs);

} // namespace sandbox::fs
