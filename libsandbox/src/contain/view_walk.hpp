#pragma once

// Where a path a contained command names leads in its view, walked by the
// node one descriptor per component (syscall_judge.cpp).

#include <cstddef>
#include <string>
#include <string_view>

namespace sandbox::detail {

/// The most work one walk does: the kernel's 40 symbolic links, and 4096
/// components in all (those of the path and of every link target taken).
/// A path a program names honestly has far fewer (PATH_MAX allows 2048);
/// a chain of links into a deep tree would otherwise cost millions.
struct walk_limits {
  int links = 40;
  size_t components = 4096;
};

/// What `walk_view` found.
struct view_walk {
  enum status_t {
    /// `path` is where the path leads.
    resolved,
    /// More links than the limit (the kernel's ELOOP).
    too_many_links,
    /// More components than the limit: where the path leads was not told.
    too_long,
    /// The root could not be opened (the caller is gone).
    no_root,
  };
  status_t status = resolved;
  /// Normalized and absolute, in the view; empty unless `resolved`.
  std::string path;
  /// Descriptors opened on the way (`openat` calls): the walk's cost.
  size_t steps = 0;
};

/// Where `path` (absolute) leads below `root` (a directory, the caller's
/// `/proc/PID/root`): every symbolic link on the way followed as the
/// kernel would (the last one only when `follow_last`), an absolute target
/// starting again at `root`, `..` going to the parent of what was opened
/// (never above `root`). Each component is opened with
/// `openat(O_PATH | O_NOFOLLOW)` from the previous one and a link read
/// through its own descriptor, so a step costs one component, whatever
/// the depth. Components that do not exist are taken as they are, and so
/// is everything after them.
view_walk walk_view(int root, std::string_view path, bool follow_last,
                    walk_limits limits = {});

/// `walk_view` from `/proc/PID/root`.
view_walk walk_view_of(int pid, std::string_view path, bool follow_last,
                       walk_limits limits = {});

} // namespace sandbox::detail
