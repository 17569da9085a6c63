#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox::fs {

/// Reads the whole regular file `abs` (symlinks followed) (§11).
///
/// A non-regular file is refused before it is read, so a FIFO without a
/// writer or a device never blocks the caller: the path is classified with
/// stat first (a device is not even opened), then opened with O_NONBLOCK and
/// checked again with fstat against a swap in between.
///
/// Errors:
/// - `path_not_found`: `abs` does not exist, or a parent is not a directory.
/// - `not_a_regular_file`: a directory, FIFO, socket or device.
/// - `permission_denied`: the file may not be read.
/// - `invalid_argument`: empty path or a path containing NUL.
/// - `io_error`: any other failure of open or read.
result<std::string> read_file(const std::string& abs);

/// Reads lines `start_line` to `end_line` (1-based, both inclusive) of
/// `abs`; `end_line` 0 reads to the end of the file (§11).
///
/// Lines end with '\n', which is kept; a last line without one is returned
/// as it is. A range that starts past the last line yields an empty string.
/// The file is streamed, so memory holds only the selected lines.
///
/// Errors: those of `read_file`, plus `invalid_argument` when `start_line`
/// is 0 or greater than a non-zero `end_line`.
result<std::string> read_text(const std::string& abs, uint64_t start_line,
                              uint64_t end_line);

/// Picks lines `start_line` to `end_line` (1-based, both inclusive; 0 as
/// the end: to the end) out of a byte stream fed chunk by chunk, with the
/// line rules of `read_text` ('\n' ends a line and is kept). Holds no bytes
/// itself, so a caller that passes each selected piece on at once streams
/// a range of any size in the memory of one chunk. `read_text` and the
/// CLI's `read --start-line/--end-line` use it.
class line_range {
public:
  /// `start_line` 0 counts as 1.
  line_range(uint64_t start_line, uint64_t end_line) noexcept
    : start_(start_line == 0 ? 1 : start_line), end_(end_line) {
  }

  /// The part of `chunk` (the next bytes of the stream) inside the range:
  /// a view into `chunk`, empty when none is. Bytes after the last wanted
  /// line are never selected.
  std::string_view select(std::string_view chunk) noexcept;

  /// Whether the last wanted line is complete: no later byte is selected,
  /// so the caller may stop reading.
  bool done() const noexcept {
    return done_;
  }

private:
  uint64_t start_;
  uint64_t end_;
  uint64_t line_ = 1;
  bool done_ = false;
};

/// A forward-only stream over the bytes of one regular file (§12). Each
/// `open` starts a fresh stream at offset 0, so a stream can be replayed by
/// opening it again. Move-only; closes its descriptor on destruction.
class file_reader {
public:
  /// Opens `abs` with the checks of `read_file` (same errors).
  static result<file_reader> open(const std::string& abs);

  file_reader(file_reader&& other) noexcept;
  file_reader& operator=(file_reader&& other) noexcept;
  file_reader(const file_reader&) = delete;
  file_reader& operator=(const file_reader&) = delete;
  ~file_reader();

  /// Returns the next chunk of at most `max_bytes` bytes; an empty string
  /// means end of file. A chunk may be shorter than `max_bytes` before the
  /// end, and large requests are capped at 1 MiB per call.
  ///
  /// Errors:
  /// - `invalid_argument`: `max_bytes` is 0, or the reader was moved from.
  /// - `io_error`: read failed; the message names the path.
  result<std::string> next(size_t max_bytes);

  /// The path given to `open`.
  const std::string& path() const noexcept {
    return path_;
  }

  /// Makes later messages name `shown` instead (a contained session's view
  /// opens files through `/proc/self/fd`).
  void show_as(std::string shown) {
    path_ = std::move(shown);
  }

private:
  file_reader(std::string path, int fd) noexcept;

  std::string path_;
  int fd_ = -1;
};

/// Writes a file atomically: bytes go to a temporary file beside the target,
/// which replaces the target on `commit` (§13). A reader sees either the old
/// file or the complete new one, never a torn file; a write that fails, is
/// abandoned or whose process is killed leaves the old file untouched.
///
/// - Parent directories are created as with `mkdir -p` (`make_directories`,
///   mode 0777 minus the umask).
/// - The temporary file is anonymous (O_TMPFILE): it has no name while the
///   bytes are written, so it never shows in a listing and a writer killed
///   by SIGKILL leaves nothing behind. At commit it is linked as
///   `.sandbox-tmp-commit` in the target's directory and at once renamed
///   over the target, both under the directory lock (below); a name left by
///   a writer killed between those two calls is removed by the next commit
///   in that directory, so that name is reserved. Where O_TMPFILE or
///   /proc/self/fd is missing, the temporary file is
///   `.<name>.sandbox-tmp-<16 hex>` from the start (created with O_EXCL;
///   the name part shortened to fit) and a killed writer leaves it behind.
/// - Permissions act as for the shell's `>`: an existing regular file that
///   the caller may not write (access(2) W_OK with the effective ids) is
///   `permission_denied`. The new file keeps the mode of the one it
///   replaces without the set-user-ID and set-group-ID bits, and its owner
///   where the caller may give the file away (root); a new file gets 0666
///   minus the umask.
/// - The write replaces the directory entry: other hard links of the old
///   file keep the old content, and a symlink at the final component is
///   replaced by a regular file (as `sed -i` and `rename(2)` do), so the
///   compare-and-swap version is the one `stat_path` reports for the path.
/// - Durability across power loss is not promised (no fsync); atomicity with
///   respect to concurrent readers and failed writes is.
///
/// Compare-and-swap: with `if_version`, the target's current `stat_path`
/// version is checked when the writer opens (to fail early) and again at
/// commit. Every commit (with or without `if_version`) and every
/// `remove_file` holds an exclusive flock(2) on the target's directory from
/// that final check to the rename, so of any number of writers holding the
/// same version exactly one wins, whether they are threads of one process
/// or separate processes. A non-empty `if_version` requires the target to
/// exist with that version; a missing target is a mismatch. An empty
/// `if_version` means "the target must not exist" (RENAME_NOREPLACE).
/// Writers that bypass this library (a shell, an editor) take no lock: a
/// change they make between the check and the rename is not detected. On a
/// file system that cannot flock a directory the check is not locked either.
///
/// Move-only. The destructor aborts an uncommitted writer.
class atomic_writer {
public:
  /// Prepares a write of `abs`: creates parent directories and the temporary
  /// file.
  ///
  /// Errors:
  /// - `invalid_argument`: empty path, NUL in the path, or a path that does
  ///   not end in a file name (e.g. "/", "/a/..", "newfile/").
  /// - `not_a_regular_file`: the target is a directory, FIFO, socket or
  ///   device.
  /// - `path_not_found`: a parent component exists but is not a directory.
  /// - `permission_denied`: a directory may not be created or written, or
  ///   the existing file may not be written.
  /// - `conflict`: `if_version` does not match the current version.
  /// - `io_error`: any other failure.
  static result<atomic_writer> open(const std::string& abs,
                                    std::optional<std::string> if_version = {});

  atomic_writer(atomic_writer&& other) noexcept = default;
  atomic_writer& operator=(atomic_writer&& other) noexcept;
  atomic_writer(const atomic_writer&) = delete;
  atomic_writer& operator=(const atomic_writer&) = delete;
  ~atomic_writer();

  /// Appends `bytes` to the temporary file.
  ///
  /// Errors:
  /// - `invalid_argument`: the writer was committed, aborted or moved from.
  /// - `io_error`: e.g. the disk is full; the writer can only be aborted.
  result<void> write(std::string_view bytes);

  /// Checks `if_version` and renames the temporary file over the target.
  /// On any error the temporary file is removed and the target untouched.
  ///
  /// Errors:
  /// - `conflict`: the version changed since the caller read it; the message
  ///   names the path, the expected and the current version.
  /// - `invalid_argument`: already committed or aborted, or moved from.
  /// - `not_a_regular_file`: a directory appeared at the target.
  /// - `timeout`: another writer held the directory lock for 10 s.
  /// - `io_error`: an earlier `write` failed, or the rename failed.
  result<void> commit();

  /// Removes the temporary file; the target stays as it was. Idempotent.
  void abort() noexcept;

  /// The target path.
  const std::string& path() const noexcept {
    return path_;
  }

  /// Makes later messages name `shown` instead (see `file_reader`).
  void show_as(std::string shown) {
    path_ = std::move(shown);
  }

private:
  atomic_writer() = default;

  result<void> commit_locked();

  std::string path_;
  std::string name_;
  /// The name of the temporary file while it has one (empty while it is
  /// anonymous).
  std::string temp_name_;
  std::optional<std::string> if_version_;
  unique_fd dir_fd_;
  unique_fd fd_;
  /// The temporary file was made with O_TMPFILE.
  bool anonymous_ = false;
  bool failed_ = false;
  bool finished_ = true;
};

/// Writes `bytes` to `abs` with an `atomic_writer` (same rules and errors).
result<void> write_file(const std::string& abs, std::string_view bytes,
                        std::optional<std::string> if_version = {});

/// Removes the file (or symlink, not its target) at `abs` (§14), under the
/// directory lock of `atomic_writer` (so a removal never slips between a
/// compare-and-swap's check and its rename). A path ending in `/` names a
/// directory (POSIX): it never removes a file or a symlink.
///
/// Errors:
/// - `path_not_found`: `abs` does not exist, or it ends in `/` and is not a
///   directory ("Not a directory").
/// - `not_a_regular_file`: `abs` is a directory, or ends in `/` and is a
///   symlink to one (directories are not removed by this call).
/// - `permission_denied`: the parent directory may not be written.
/// - `invalid_argument`: empty path or a path containing NUL.
/// - `io_error`: any other failure of unlink.
result<void> remove_file(const std::string& abs);

} // namespace sandbox::fs
