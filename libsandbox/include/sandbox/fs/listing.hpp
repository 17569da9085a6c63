#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "sandbox/errc.hpp"
#include "sandbox/fs/stat.hpp"

namespace sandbox::fs {

/// One entry of `list_files`.
struct dir_entry {
  std::string name;
  /// False when the entry's metadata could not be read (e.g. a dangling
  /// symlink); `is_dir` and `size` are then false and 0 and mean nothing.
  bool has_metadata = false;
  bool is_dir = false;
  uint64_t size = 0;
};

/// Lists the directory `abs` (§15): its entries without `.` and `..`,
/// sorted by name in byte order (as `strcmp`, independent of the locale).
///
/// Metadata follows symlinks, as `is_dir` and `size` do in the agent
/// frameworks we match: a link to a directory has `is_dir` true. An entry
/// whose metadata cannot be read (a dangling or looping symlink, an entry
/// removed while listing, an unsearchable directory) is still listed, with
/// `has_metadata` false. The whole listing is held in memory; use
/// `tree_walker` for a bounded-memory stream.
///
/// Errors:
/// - `path_not_found`: `abs` does not exist or is not a directory.
/// - `permission_denied`: the directory may not be read.
/// - `invalid_argument`: empty path or a path containing NUL.
/// - `io_error`: any other failure of open or readdir.
result<std::vector<dir_entry>> list_files(const std::string& abs);

/// One item of a tree walk (§16).
struct frame {
  /// Path relative to the walked root, '/'-separated (e.g. "src/main.cpp").
  std::string path;
  /// Last component of `path`.
  std::string name;
  /// Kind of the entry itself; symlinks are reported, never followed.
  file_kind kind = file_kind::other;
  /// As `file_stat::size`.
  uint64_t size = 0;
};

/// A lazy, depth-first walk of a directory tree (§16).
///
/// Entries come in pre-order (a directory, then everything below it), the
/// siblings of each directory sorted by name in byte order. Symlinks are
/// reported as `file_kind::symlink` and never entered, so a symlink loop
/// cannot make the walk loop. `max_depth` counts levels below the root: 1
/// yields the root's children, 2 also grandchildren, 0 nothing at all.
///
/// Memory bound: the walker holds the sorted names of each directory on the
/// current path from the root (at most `max_depth` directories, each
/// listing only its own names) and exactly one open directory descriptor. It
/// does not grow with the size of the tree, only with the largest
/// directories along one path. Returning to a parent reopens it with
/// `openat(.., "..")` and checks its device and inode, so a tree moved away
/// mid-walk ends in an error instead of wrong output.
///
/// Move-only; a moved-from walker is done.
class tree_walker {
public:
  /// Opens `abs_root` (a symlink as the root itself is followed, like
  /// `ls link`).
  ///
  /// Errors:
  /// - `path_not_found`: the root does not exist or is not a directory.
  /// - `permission_denied`: the root may not be read.
  /// - `invalid_argument`: empty path or a path containing NUL.
  /// - `io_error`: any other failure.
  static result<tree_walker> open(const std::string& abs_root,
                                  uint32_t max_depth);

  tree_walker(tree_walker&& other) noexcept;
  tree_walker& operator=(tree_walker&& other) noexcept;
  tree_walker(const tree_walker&) = delete;
  tree_walker& operator=(const tree_walker&) = delete;
  ~tree_walker();

  /// Returns the next frame, or `nullopt` once the walk is complete.
  ///
  /// After an error the walk is over: the next call returns `nullopt`.
  /// Entries that vanish between reading a directory and examining them are
  /// skipped.
  ///
  /// Errors (each message names the offending path):
  /// - `permission_denied`: a subdirectory may not be read or an entry may
  ///   not be examined.
  /// - `path_not_found`: a directory vanished before it could be entered.
  /// - `io_error`: any other failure, or the tree was moved mid-walk.
  result<std::optional<frame>> next();

  /// Makes later messages name `shown` as the root (a contained session's
  /// view opens the root through `/proc/self/fd`).
  void show_as(std::string shown) {
    root_ = std::move(shown);
  }

private:
  // One directory on the current path from the root.
  struct level {
    // Relative path of the directory ("" for the root).
    std::string prefix;
    // Sorted names of its entries, and the index of the next one.
    std::vector<std::string> names;
    size_t index = 0;
    dev_t dev = 0;
    ino_t ino = 0;
  };

  tree_walker() = default;

  result<void> push_level(int fd, std::string prefix);
  result<void> pop_level();
  error fail(error err);

  std::string root_;
  uint32_t max_depth_ = 0;
  // Descriptor of the directory at the top of `stack_`.
  int fd_ = -1;
  std::vector<level> stack_;
  // A directory frame just handed out that is to be entered on the next
  // call (empty when none).
  std::optional<std::string> pending_dir_;
};

} // namespace sandbox::fs
