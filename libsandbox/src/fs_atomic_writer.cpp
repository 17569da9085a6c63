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

#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/fs/stat.hpp"

namespace sandbox::fs {

namespace {

// Room left in a NAME_MAX (255) file name for the name part of a temporary
// file once the dot, ".sandbox-tmp-" and 16 hex digits are added.
constexpr size_t max_temp_stem = 255 - 1 - 13 - 16;

constexpr int max_temp_attempts = 16;

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

// mkdir -p: creates every missing component of the absolute directory `dir`.
result<void> make_dirs(const std::string& dir, const std::string& abs) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/')
      continue;
    auto prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      return write_error(errno, abs, fmt::format("create directory {}",
                                                 prefix));
  }
  return {};
}

// Opens the directory that will hold the target, creating it if needed.
result<int> open_parent(const std::string& dir, const std::string& abs) {
  auto flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  auto fd = ::open(dir.c_str(), flags);
  if (fd < 0 && errno == ENOENT) {
    if (auto made = make_dirs(dir, abs); !made)
      return made.error();
    fd = ::open(dir.c_str(), flags);
  }
  if (fd < 0) {
    if (errno == ENOTDIR)
      return error{errc::path_not_found,
                   fmt::format("write {}: a parent of it is not a directory",
                               abs)};
    return write_error(errno, abs, fmt::format("open directory {}", dir));
  }
  return fd;
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
  if (name.empty() || name == "." || name == "..")
    return error{errc::invalid_argument,
                 fmt::format("write {}: the path does not name a file", abs)};
  atomic_writer w;
  w.path_ = abs;
  w.name_ = name;
  w.if_version_ = std::move(if_version);
  auto dir_fd = open_parent(dir, abs);
  if (!dir_fd)
    return dir_fd.error();
  // From here on `w` owns the descriptor and closes it on every error path.
  w.dir_fd_ = *dir_fd;
  struct ::stat st;
  auto exists = ::fstatat(w.dir_fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW)
                == 0;
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
  auto stem = name.substr(0, max_temp_stem);
  for (int i = 0; i < max_temp_attempts && w.fd_ < 0; ++i) {
    w.temp_name_ = fmt::format(".{}.sandbox-tmp-{:016x}", stem, random_u64());
    w.fd_ = ::openat(w.dir_fd_, w.temp_name_.c_str(),
                     O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                     keep_mode ? 0600 : 0666);
    if (w.fd_ < 0 && errno != EEXIST)
      return write_error(errno, abs, "create temporary file");
  }
  if (w.fd_ < 0)
    return write_error(EEXIST, abs, "create temporary file");
  w.finished_ = false;
  if (keep_mode) {
    // Best effort for the owner: only a privileged writer may give the file
    // away, and failing to do so must not fail the write.
    if (st.st_uid != ::geteuid() || st.st_gid != ::getegid()) {
      if (::fchown(w.fd_, st.st_uid, st.st_gid) != 0) {
        // Not permitted: the new file belongs to the writer.
      }
    }
    if (::fchmod(w.fd_, st.st_mode & 07777) != 0)
      return write_error(errno, abs, "keep the file mode");
  }
  return w;
}

atomic_writer::atomic_writer(atomic_writer&& other) noexcept
  : path_(std::move(other.path_)),
    name_(std::move(other.name_)),
    temp_name_(std::move(other.temp_name_)),
    if_version_(std::move(other.if_version_)),
    dir_fd_(std::exchange(other.dir_fd_, -1)),
    fd_(std::exchange(other.fd_, -1)),
    failed_(other.failed_),
    finished_(std::exchange(other.finished_, true)) {
}

atomic_writer& atomic_writer::operator=(atomic_writer&& other) noexcept {
  if (this != &other) {
    abort();
    path_ = std::move(other.path_);
    name_ = std::move(other.name_);
    temp_name_ = std::move(other.temp_name_);
    if_version_ = std::move(other.if_version_);
    dir_fd_ = std::exchange(other.dir_fd_, -1);
    fd_ = std::exchange(other.fd_, -1);
    failed_ = other.failed_;
    finished_ = std::exchange(other.finished_, true);
  }
  return *this;
}

atomic_writer::~atomic_writer() {
  abort();
}

result<void> atomic_writer::write(std::string_view bytes) {
  if (finished_)
    return error{errc::invalid_argument,
                 fmt::format("write {}: the write is already finished",
                             path_)};
  while (!bytes.empty()) {
    auto n = ::write(fd_, bytes.data(), bytes.size());
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
  if (finished_)
    return error{errc::invalid_argument,
                 fmt::format("write {}: the write is already finished",
                             path_)};
  if (failed_) {
    abort();
    return error{errc::io_error,
                 fmt::format("write {}: an earlier write failed; the file "
                             "was left unchanged",
                             path_)};
  }
  // close() may report a deferred write error (e.g. on NFS): the temporary
  // file is then incomplete and must not replace the target.
  auto rc = ::close(std::exchange(fd_, -1));
  if (rc != 0) {
    auto err = write_error(errno, path_, "close temporary file");
    abort();
    return err;
  }
  auto fail = [this](error err) -> result<void> {
    abort();
    return err;
  };
  auto from = temp_name_.c_str();
  auto to = name_.c_str();
  if (if_version_ && if_version_->empty()) {
    // "Must not exist" is checked and enforced in one step by the kernel.
    if (::renameat2(dir_fd_, from, dir_fd_, to, RENAME_NOREPLACE) == 0) {
      temp_name_.clear();
      abort();
      return {};
    }
    if (errno == EEXIST) {
      auto found = current_version(dir_fd_, name_, path_);
      return fail(conflict(path_, "", found ? *found : "unknown"));
    }
    if (errno != EINVAL && errno != ENOSYS)
      return fail(write_error(errno, path_, "rename temporary file"));
    // The file system lacks RENAME_NOREPLACE: fall back to check + rename.
  }
  if (if_version_) {
    auto found = current_version(dir_fd_, name_, path_);
    if (!found)
      return fail(found.error());
    if (*found != *if_version_)
      return fail(conflict(path_, *if_version_, *found));
  }
  if (::renameat(dir_fd_, from, dir_fd_, to) != 0) {
    if (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)
      return fail(error{errc::not_a_regular_file,
                        fmt::format("write {}: the target is a directory",
                                    path_)});
    return fail(write_error(errno, path_, "rename temporary file"));
  }
  // The temporary name is gone now; abort() only closes the directory.
  temp_name_.clear();
  abort();
  return {};
}

void atomic_writer::abort() noexcept {
  if (fd_ >= 0)
    ::close(std::exchange(fd_, -1));
  if (dir_fd_ >= 0) {
    if (!finished_ && !temp_name_.empty())
      ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
    ::close(std::exchange(dir_fd_, -1));
  }
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
