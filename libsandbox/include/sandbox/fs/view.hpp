#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/errc.hpp"
#include "sandbox/fs/acting_as.hpp"
#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/listing.hpp"
#include "sandbox/fs/stat.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox::fs {

/// What a contained session may see and change (docs/security.md). Paths
/// are absolute as the session sees them.
struct view_policy {
  /// Refused to every operation (read or write), except below a `kept`
  /// directory that lies inside them.
  std::vector<std::string> deny;
  /// Reachable even inside a denied path (the session's working directory
  /// and home).
  std::vector<std::string> kept;
  /// The only places below which a write, remove or mkdir may happen.
  std::vector<std::string> writable;
  /// The session's own host ids, if it has them: its file operations must
  /// run `acting_as` them (see there).
  file_ids ids;
};

/// An operation the policy refused: the kind and the path (as the session
/// sees it, symlinks resolved) it would have touched.
struct denial {
  enum kind_t : uint8_t { read_denied, write_denied } kind = read_denied;
  std::string path;
};

/// The file system as the commands of one contained session see it: every
/// path is resolved inside the session's mount namespace, from the root of
/// its init (`/proc/<init>/root`), one component at a time. Symlinks are
/// followed by hand, inside the view (an absolute target starts again at
/// the view's root, `..` never climbs above it), and every component is
/// opened with `O_NOFOLLOW` relative to its parent, so the file the
/// operation touches is the one the policy was checked on: a symlink or a
/// rename planted by a command cannot send it elsewhere. The operations
/// then run through `/proc/self/fd/<n>` of what was resolved, with the
/// rules and errors of the functions they wrap (`read_file`,
/// `atomic_writer`, ...); messages name the session's path.
///
/// Policy: a path whose resolved form is denied is `permission_denied`
/// naming it (whether or not it exists in the view); a write, remove or
/// directory creation outside `view_policy::writable` is
/// `permission_denied` too, and changes nothing. Each refusal is also
/// stored in `*refused` when given.
///
/// Immutable once opened; its functions may run on any thread.
class session_view {
public:
  /// Opens the root `root` (e.g. `/proc/<init>/root`) and resolves the
  /// policy's directories inside it (the deny list as the host resolves
  /// it, the mounts covering them being at those paths). Errors: those of
  /// `open` naming `root`.
  static result<std::shared_ptr<const session_view>>
  open(const std::string& root, view_policy policy);

  ~session_view();
  session_view(const session_view&) = delete;
  session_view& operator=(const session_view&) = delete;

  result<std::string> read_file(const std::string& abs,
                                denial* refused = nullptr) const;
  result<std::string> read_text(const std::string& abs, uint64_t start_line,
                                uint64_t end_line,
                                denial* refused = nullptr) const;
  result<file_reader> open_reader(const std::string& abs,
                                  denial* refused = nullptr) const;
  /// Missing parents are made (inside the writable directories only).
  result<atomic_writer> open_writer(const std::string& abs,
                                    std::optional<std::string> if_version,
                                    denial* refused = nullptr) const;
  result<void> write_file(const std::string& abs, std::string_view bytes,
                          std::optional<std::string> if_version,
                          denial* refused = nullptr) const;
  result<void> remove_file(const std::string& abs,
                           denial* refused = nullptr) const;
  /// Entries that are symlinks get the metadata of their target in the
  /// view (none when it is missing or denied).
  result<std::vector<dir_entry>> list_files(const std::string& abs,
                                            denial* refused = nullptr) const;
  result<tree_walker> open_walker(const std::string& abs, uint32_t max_depth,
                                  denial* refused = nullptr) const;
  result<file_stat> stat(const std::string& abs,
                         denial* refused = nullptr) const;

  /// Whether the policy refuses reading `path` (resolved, absolute).
  bool denied(std::string_view path) const;
  /// Whether the policy allows changing `path` (resolved, absolute).
  bool writable(std::string_view path) const;
  /// The ids the operations must run as (`view_policy::ids`).
  file_ids ids() const noexcept {
    return policy_.ids;
  }

private:
  session_view() = default;

  struct resolved;
  enum class mode { object, entry, make_parents };

  result<resolved> resolve(const std::string& abs, std::string_view verb,
                           mode m, bool write, denial* refused) const;

  unique_fd root_;
  view_policy policy_;
};

} // namespace sandbox::fs
