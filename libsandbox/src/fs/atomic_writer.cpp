#include "sandbox/fs/file_io.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <utility>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fs/dir_lock.hpp"
#include "sandbox/fs/directories.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/fs/stat.hpp"

namespace sandbox::fs {

namespace {

// Room left in a NAME_MAX (255) file name for the name part of a temporary
// file once the dot, ".sandbox-tmp-" and 16 hex digits are added.
constexpr size_t max_temp_stem = 255 - 1 - 13 - 16;

constexpr int max_temp_attempts = 16;

// The name an anonymous temporary file gets for its rename at commit, under
// the directory lock (see `atomic_writer`).
constexpr const char* commit_temp_name = ".sandbox-tmp-commit";

error write_error(int err, const std::string& abs, std::string_view what) {
  return make_errno_error(err, fmt::format("write {}: {}", abs, what));
}

uint64_t random_u64() {
  uint64_t x = 0;
  if (::getrandom(&x, sizeof(x), 0) != static_cast<ssize_t>(sizeof(x))) {
    // getrandom only fails before the entropy pool is ready; uniqueness (not
    // secrecy) is what matters and O_EXCL retries guard against collisions.
    x = static_cast<uint64_t>(::getpid()) << 32
        ^ static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&x));
  }
  return x;
}

// Opens the directory that will hold the target, creating it if needed.
result<unique_fd> open_parent(const std::string& dir, const std::string& abs) {
  auto flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  unique_fd fd{::open(dir.c_str(), flags)};
  if (!fd && errno == ENOENT) {
    if (auto made = make_directories(dir); !made)
      return error{made.error().code,
                   fmt::format("write {}: {}", abs, made.error().message)};
    fd.reset(::open(dir.c_str(), flags));
  }
  if (!fd) {
    if (errno == ENOTDIR)
      return error{errc::path_not_found,
                   fmt::format("write {}: a parent of it is not a directory",
                               abs)};
    return write_error(errno, abs, fmt::format("open directory {}", dir));
  }
  return fd;
}

// True when this process can name an O_TMPFILE file through
// /proc/self/fd (linkat with AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH).
bool can_link_anonymous() {
  static const bool yes = ::access("/proc/self/fd", X_OK) == 0;
  return yes;
}

// Creates an anonymous temporary file in `dir_fd`; an invalid descriptor
// when the file system (or the kernel) has no O_TMPFILE.
result<unique_fd> open_anonymous(int dir_fd, mode_t mode,
                                 const std::string& abs) {
  if (!can_link_anonymous())
    return unique_fd{};
  unique_fd fd{::openat(dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode)};
  if (fd)
    return fd;
  switch (errno) {
    case EOPNOTSUPP:
    case EISDIR:
    case EINVAL:
    case ENOENT:
      return unique_fd{};
    default:
      return write_error(errno, abs, "create temporary file");
  }
}

// Returns the version of `name` in `dir_fd`, or an empty string when there
// is no such file.
result<std::string> current_version(int dir_fd, const std::string& name,
                                    const std::string& abs) {
  struct ::stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
    return version_of(st);
  if (errno == ENOENT)
    return std::string{};
  return write_error(errno, abs, "stat");
}

error conflict(const std::string& abs, const std::string& expected,
               const std::string& found) {
  auto want = expected.empty() ? std::string{"no file"}
                               : fmt::format("version {}", expected);
  auto have = found.empty() ? std::string{"no file"}
                            : fmt::format("version {}", found);
  return error{errc::conflict,
               fmt::format("write {}: version conflict: expected {}, found {}",
                           abs, want, have)};
}

} // namespace

// -- atomic_writer ------------------------------------------------------------

result<atomic_writer>
atomic_writer::open(const std::string& abs,
                    std::optional<std::string> if_version) {
  if (auto valid = validate_path(abs); !valid)
    return valid.error();
  auto slash = abs.rfind('/');
  auto name = slash == std::string::npos ? abs : abs.substr(slash + 1);
  auto dir = slash == std::string::npos ? std::string{"."}
             : slash == 0               ? std::string{"/"}
                                        : abs.substr(0, slash);
  if (name.empty() || name == "." || name == "..") {
    // A trailing slash (or a final . or ..) names a directory: POSIX
    // refuses to create a file there, and so do we.
    struct ::stat st;
    if (::stat(abs.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      return error{errc::not_a_regular_file,
                   fmt::format("write {}: not a regular file (a directory)",
                               abs)};
    return error{errc::invalid_argument,
                 fmt::format("write {}: the path does not name a file (a "
                             "path ending in '/' names a directory)",
                             abs)};
  }
  atomic_writer w;
  w.path_ = abs;
  w.name_ = name;
  w.if_version_ = std::move(if_version);
  auto dir_fd = open_parent(dir, abs);
  if (!dir_fd)
    return dir_fd.error();
  w.dir_fd_ = std::move(*dir_fd);
  struct ::stat st;
  auto exists
    = ::fstatat(w.dir_fd_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && errno != ENOENT)
    return write_error(errno, abs, "stat");
  if (exists && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    return error{errc::not_a_regular_file,
                 fmt::format("write {}: not a regular file ({})", abs,
                             S_ISDIR(st.st_mode) ? "a directory"
                                                 : "a special file")};
  if (w.if_version_) {
    auto found = exists ? version_of(st) : std::string{};
    if (found != *w.if_version_)
      return conflict(abs, *w.if_version_, found);
  }
  auto keep_mode = exists && S_ISREG(st.st_mode);
  // As the shell's `>`: a file the caller could not open for writing is
  // not replaced either (root passes, as it does for open).
  if (keep_mode
      && ::faccessat(w.dir_fd_.get(), name.c_str(), W_OK, AT_EACCESS) != 0
      && errno != ENOENT)
    return make_errno_error(errno, fmt::format("write {}: the file is not "
                                               "writable",
                                               abs));
  auto mode = keep_mode ? 0600 : 0666;
  auto anonymous = open_anonymous(w.dir_fd_.get(), mode, abs);
  if (!anonymous)
    return anonymous.error();
  w.fd_ = std::move(*anonymous);
  w.anonymous_ = static_cast<bool>(w.fd_);
  auto stem = name.substr(0, max_temp_stem);
  for (int i = 0; i < max_temp_attempts && !w.fd_; ++i) {
    w.temp_name_ = fmt::format(".{}.sandbox-tmp-{:016x}", stem, random_u64());
    w.fd_.reset(::openat(w.dir_fd_.get(), w.temp_name_.c_str(),
                         O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
    if (!w.fd_ && errno != EEXIST) {
      w.temp_name_.clear();
      return write_error(errno, abs, "create temporary file");
    }
  }
  if (!w.fd_) {
    w.temp_name_.clear();
    return write_error(EEXIST, abs, "create temporary file");
  }
  w.finished_ = false;
  if (keep_mode) {
    // Best effort for the owner: only a privileged writer may give the file
    // away, and failing to do so must not fail the write.
    if (st.st_uid != ::geteuid() || st.st_gid != ::getegid()) {
      if (::fchown(w.fd_.get(), st.st_uid, st.st_gid) != 0) {
        // Not permitted: the new file belongs to the writer.
      }
    }
    // The set-ID bits are dropped, as the kernel drops them when someone
    // other than root writes to such a file.
    if (::fchmod(w.fd_.get(), st.st_mode & 01777) != 0)
      return write_error(errno, abs, "keep the file mode");
  }
  return w;
}

atomic_writer& atomic_writer::operator=(atomic_writer&& other) noexcept {
  if (this != &other) {
    abort();
    path_ = std::move(other.path_);
    name_ = std::move(other.name_);
    temp_name_ = std::exchange(other.temp_name_, {});
    if_version_ = std::move(other.if_version_);
    dir_fd_ = std::move(other.dir_fd_);
    fd_ = std::move(other.fd_);
    anonymous_ = other.anonymous_;
    failed_ = other.failed_;
    finished_ = std::exchange(other.finished_, true);
  }
  return *this;
}

atomic_writer::~atomic_writer() {
  abort();
}

result<void> atomic_writer::write(std::string_view bytes) {
  if (finished_ || !fd_)
    return error{errc::invalid_argument,
                 fmt::format("write {}: the write is already finished", path_)};
  while (!bytes.empty()) {
    auto n = ::write(fd_.get(), bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      failed_ = true;
      return write_error(errno, path_, "write temporary file");
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

result<void> atomic_writer::commit() {
  if (finished_ || !fd_)
    return error{errc::invalid_argument,
                 fmt::format("write {}: the write is already finished", path_)};
  if (failed_) {
    abort();
    return error{errc::io_error,
                 fmt::format("write {}: an earlier write failed; the file "
                             "was left unchanged",
                             path_)};
  }
  auto outcome = commit_locked();
  if (outcome)
    temp_name_.clear(); // renamed: nothing left to remove
  abort();
  return outcome;
}

// Runs under the directory lock, released on return (before `commit` closes
// the directory). On success the temporary file has replaced the target.
result<void> atomic_writer::commit_locked() {
  if (!anonymous_) {
    // close() may report a deferred write error (e.g. on NFS): the
    // temporary file is then incomplete and must not replace the target.
    if (::close(fd_.release()) != 0)
      return write_error(errno, path_, "close temporary file");
  }
  auto dir = dir_fd_.get();
  auto lock = detail::dir_lock::acquire(dir, path_, "write");
  if (!lock)
    return lock.error();
  // Under the lock no other writer of this directory is between its check
  // and its rename, so the version seen here is the one the rename replaces
  // (unless someone bypasses the lock).
  if (if_version_ && !if_version_->empty()) {
    auto found = current_version(dir, name_, path_);
    if (!found)
      return found.error();
    if (*found != *if_version_)
      return conflict(path_, *if_version_, *found);
  }
  if (anonymous_) {
    // Give the anonymous file a name for the rename. Under the lock, the
    // fixed name can only be left over from a writer killed right here.
    auto name = lock->held()
                  ? std::string{commit_temp_name}
                  : fmt::format(".{}.sandbox-tmp-{:016x}",
                                name_.substr(0, max_temp_stem), random_u64());
    auto proc = fmt::format("/proc/self/fd/{}", fd_.get());
    auto link = [&] {
      return ::linkat(AT_FDCWD, proc.c_str(), dir, name.c_str(),
                      AT_SYMLINK_FOLLOW);
    };
    auto rc = link();
    if (rc != 0 && errno == EEXIST && lock->held()) {
      ::unlinkat(dir, name.c_str(), 0);
      rc = link();
    }
    if (rc != 0)
      return write_error(errno, path_, "name the temporary file");
    temp_name_ = std::move(name);
    if (::close(fd_.release()) != 0) {
      auto err = errno;
      ::unlinkat(dir, temp_name_.c_str(), 0); // still under the lock
      temp_name_.clear();
      return write_error(err, path_, "close temporary file");
    }
  }
  auto renamed = [&]() -> result<void> {
    auto from = temp_name_.c_str();
    auto to = name_.c_str();
    if (if_version_ && if_version_->empty()) {
      // "Must not exist" is checked and enforced in one step by the kernel.
      if (::renameat2(dir, from, dir, to, RENAME_NOREPLACE) == 0)
        return {};
      if (errno == EEXIST) {
        auto found = current_version(dir, name_, path_);
        return conflict(path_, "", found ? *found : "unknown");
      }
      if (errno != EINVAL && errno != ENOSYS)
        return write_error(errno, path_, "rename temporary file");
      // The file system lacks RENAME_NOREPLACE: fall back to check + rename.
      auto found = current_version(dir, name_, path_);
      if (!found)
        return found.error();
      if (!found->empty())
        return conflict(path_, "", *found);
    }
    if (::renameat(dir, from, dir, to) != 0) {
      if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)
        return error{errc::not_a_regular_file,
                     fmt::format("write {}: the target is a directory", path_)};
      return write_error(errno, path_, "rename temporary file");
    }
    return {};
  }();
  if (!renamed && !temp_name_.empty()) {
    // Remove the name while the lock still excludes the other writers: once
    // it is released, the fixed commit name may be the next writer's, and
    // `abort` must not remove that one.
    ::unlinkat(dir, temp_name_.c_str(), 0);
    temp_name_.clear();
  }
  return renamed;
}

void atomic_writer::abort() noexcept {
  fd_.reset();
  if (dir_fd_ && !finished_ && !temp_name_.empty())
    ::unlinkat(dir_fd_.get(), temp_name_.c_str(), 0);
  temp_name_.clear();
  dir_fd_.reset();
  finished_ = true;
}

// -- write_file ---------------------------------------------------------------

result<void> write_file(const std::string& abs, std::string_view bytes,
                        std::optional<std::string> if_version) {
  auto writer = atomic_writer::open(abs, std::move(if_version));
  if (!writer)
    return writer.error();
  if (auto written = writer->write(bytes); !written)
    return written.error();
  return writer->commit();
}

} // namespace sandbox::fs
