#include "sandbox/fs/file_io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <optional>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fs/dir_lock.hpp"
#include "sandbox/fs/path_resolver.hpp"

namespace sandbox::fs {

namespace {

constexpr size_t max_chunk = 1024 * 1024;

constexpr size_t text_chunk = 64 * 1024;

std::string_view describe(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  return "not a regular file";
}

error not_regular(const std::string& abs, mode_t mode) {
  return error{errc::not_a_regular_file,
               fmt::format("read {}: not a regular file ({})", abs,
                           describe(mode))};
}

// Opens `abs` for reading if and only if it is a regular file. Classifying
// with stat first means a device is never opened (opening some devices has
// side effects); O_NONBLOCK plus fstat then guards against the path being
// swapped for a FIFO in between, whose blocking open would wait forever for
// a writer.
// Stores the size seen by fstat in `size` when given.
result<int> open_regular(const std::string& abs, uint64_t* size = nullptr) {
  if (auto valid = validate_path(abs); !valid)
    return valid.error();
  struct ::stat st;
  if (::stat(abs.c_str(), &st) != 0)
    return make_errno_error(errno, fmt::format("read {}", abs));
  if (!S_ISREG(st.st_mode))
    return not_regular(abs, st.st_mode);
  auto fd = ::open(abs.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return make_errno_error(errno, fmt::format("read {}", abs));
  if (::fstat(fd, &st) != 0) {
    auto err = make_errno_error(errno, fmt::format("read {}", abs));
    ::close(fd);
    return err;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return not_regular(abs, st.st_mode);
  }
  if (size != nullptr)
    *size = st.st_size < 0 ? 0 : static_cast<uint64_t>(st.st_size);
  // Regular files ignore O_NONBLOCK today; clear it anyway so that reads
  // keep plain blocking semantics on every file system.
  auto flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

// Reads up to `n` bytes into `buf`, retrying on EINTR. Returns the count,
// 0 at end of file.
result<size_t> read_some(int fd, char* buf, size_t n, const std::string& abs) {
  for (;;) {
    auto got = ::read(fd, buf, n);
    if (got >= 0)
      return static_cast<size_t>(got);
    if (errno != EINTR)
      return make_errno_error(errno, fmt::format("read {}", abs));
  }
}

} // namespace

// -- read_file ----------------------------------------------------------------

result<std::string> read_file(const std::string& abs) {
  uint64_t size = 0;
  auto fd = open_regular(abs, &size);
  if (!fd)
    return fd.error();
  // The size is a hint only: the file may grow or shrink while we read, so
  // read until EOF and grow the buffer as needed. The extra byte lets the
  // common case see EOF without a reallocation.
  std::string result;
  size_t used = 0;
  try {
    result.resize(static_cast<size_t>(size) + 1);
    for (;;) {
      if (used == result.size())
        result.resize(result.size() * 2);
      auto got = read_some(*fd, result.data() + used, result.size() - used,
                           abs);
      if (!got) {
        ::close(*fd);
        return got.error();
      }
      if (*got == 0)
        break;
      used += *got;
    }
  } catch (const std::exception&) {
    // bad_alloc or length_error, e.g. for a huge sparse file.
    ::close(*fd);
    return error{errc::io_error,
                 fmt::format("read {}: the file is too large to read at once "
                             "({} bytes); read it as a stream",
                             abs, size)};
  }
  ::close(*fd);
  result.resize(used);
  return result;
}

// -- read_text ----------------------------------------------------------------

result<std::string> read_text(const std::string& abs, uint64_t start_line,
                              uint64_t end_line) {
  if (start_line == 0)
    return error{errc::invalid_argument,
                 fmt::format("read {}: line numbers start at 1, got 0", abs)};
  if (end_line != 0 && start_line > end_line)
    return error{errc::invalid_argument,
                 fmt::format("read {}: start line {} is after end line {}", abs,
                             start_line, end_line)};
  auto reader = file_reader::open(abs);
  if (!reader)
    return reader.error();
  line_range range{start_line, end_line};
  std::string result;
  // Stop as soon as the last wanted line is complete: no need to stream
  // the rest of a large file.
  while (!range.done()) {
    auto chunk = reader->next(text_chunk);
    if (!chunk)
      return chunk.error();
    if (chunk->empty())
      break;
    result += range.select(*chunk);
  }
  return result;
}

// -- line_range ---------------------------------------------------------------

std::string_view line_range::select(std::string_view chunk) noexcept {
  if (done_)
    return {};
  size_t from = chunk.size(); // where the selection starts
  size_t at = 0;
  while (at < chunk.size()) {
    if (line_ >= start_ && from == chunk.size())
      from = at;
    auto nl = chunk.find('\n', at);
    if (nl == std::string_view::npos)
      break; // the line goes on in the next chunk
    at = nl + 1;
    if (end_ != 0 && line_ == end_) {
      done_ = true;
      return chunk.substr(from, at - from);
    }
    ++line_;
  }
  return chunk.substr(from);
}

// -- file_reader --------------------------------------------------------------

file_reader::file_reader(std::string path, int fd) noexcept
  : path_(std::move(path)), fd_(fd) {
}

result<file_reader> file_reader::open(const std::string& abs) {
  auto fd = open_regular(abs);
  if (!fd)
    return fd.error();
  return file_reader{abs, *fd};
}

file_reader::file_reader(file_reader&& other) noexcept
  : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {
}

file_reader& file_reader::operator=(file_reader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

file_reader::~file_reader() {
  if (fd_ >= 0)
    ::close(fd_);
}

result<std::string> file_reader::next(size_t max_bytes) {
  if (fd_ < 0)
    return error{errc::invalid_argument,
                 fmt::format("read {}: the stream is closed", path_)};
  if (max_bytes == 0)
    return error{errc::invalid_argument,
                 fmt::format("read {}: a chunk size of 0 bytes", path_)};
  std::string buf;
  buf.resize(std::min(max_bytes, max_chunk));
  auto got = read_some(fd_, buf.data(), buf.size(), path_);
  if (!got)
    return got.error();
  buf.resize(*got);
  return buf;
}

// -- remove_file --------------------------------------------------------------

result<void> remove_file(const std::string& abs) {
  if (auto valid = validate_path(abs); !valid)
    return valid.error();
  if (names_directory(abs)) {
    // "f/" names a directory (POSIX): never unlink the file f, nor a
    // symlink "link" because "link/" resolves to the directory it names.
    struct ::stat st;
    if (::stat(abs.c_str(), &st) != 0)
      return make_errno_error(errno, fmt::format("remove {}", abs));
    if (!S_ISDIR(st.st_mode))
      return make_errno_error(ENOTDIR, fmt::format("remove {}", abs));
    return error{errc::not_a_regular_file,
                 fmt::format("remove {}: is a directory, not a file", abs)};
  }
  auto slash = abs.rfind('/');
  auto name = slash == std::string::npos ? abs : abs.substr(slash + 1);
  auto dir = slash == std::string::npos ? std::string{"."}
             : slash == 0               ? std::string{"/"}
                                        : abs.substr(0, slash);
  // The lock of atomic_writer: a removal never lands between the version
  // check and the rename of a compare-and-swap write. A directory we may
  // not open for reading cannot be locked: unlink without the lock.
  unique_fd dir_fd{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  std::optional<detail::dir_lock> lock;
  if (dir_fd) {
    auto locked = detail::dir_lock::acquire(dir_fd.get(), abs, "remove");
    if (!locked)
      return locked.error();
    lock.emplace(std::move(*locked));
  }
  auto rc = dir_fd ? ::unlinkat(dir_fd.get(), name.c_str(), 0)
                   : ::unlink(abs.c_str());
  if (rc == 0)
    return {};
  auto err = errno;
  struct ::stat st;
  // Linux reports EISDIR for a directory, POSIX allows EPERM: tell both apart
  // from a real permission problem by looking at the path.
  if (err == EISDIR
      || (err == EPERM && ::lstat(abs.c_str(), &st) == 0
          && S_ISDIR(st.st_mode)))
    return error{errc::not_a_regular_file,
                 fmt::format("remove {}: is a directory, not a file", abs)};
  return make_errno_error(err, fmt::format("remove {}", abs));
}

} // namespace sandbox::fs
