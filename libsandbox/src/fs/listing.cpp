#include "sandbox/fs/listing.hpp"

#include <algorithm>
#include <cerrno>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "sandbox/fs/path_resolver.hpp"

namespace sandbox::fs {

namespace {

constexpr int dir_flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;

std::string join(std::string_view dir, std::string_view name) {
  std::string result;
  result.reserve(dir.size() + name.size() + 1);
  result = dir;
  if (!result.empty() && result.back() != '/')
    result += '/';
  result += name;
  return result;
}

error list_error(int err, std::string_view abs) {
  return make_errno_error(err, fmt::format("list {}", abs));
}

// Reads the names in the open directory `fd` (without `.` and `..`) and
// sorts them by bytes. `fd` stays open and usable: readdir works on a
// duplicate because closedir closes the descriptor it was given.
result<std::vector<std::string>> read_names(int fd, std::string_view abs) {
  auto dup_fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0)
    return list_error(errno, abs);
  auto* dir = ::fdopendir(dup_fd);
  if (dir == nullptr) {
    auto err = list_error(errno, abs);
    ::close(dup_fd);
    return err;
  }
  std::vector<std::string> names;
  for (;;) {
    // readdir signals errors only through errno, so clear it first.
    errno = 0;
    auto* ent = ::readdir(dir);
    if (ent == nullptr)
      break;
    std::string_view name = ent->d_name;
    if (name != "." && name != "..")
      names.emplace_back(name);
  }
  auto err = errno;
  ::closedir(dir);
  if (err != 0)
    return list_error(err, abs);
  // std::string compares through char_traits<char>, which orders as
  // unsigned char: the same order as strcmp, whatever the locale.
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace

// -- list_files ---------------------------------------------------------------

result<std::vector<dir_entry>> list_files(const std::string& abs) {
  if (auto valid = validate_path(abs); !valid)
    return valid.error();
  auto fd = ::open(abs.c_str(), dir_flags);
  if (fd < 0)
    return list_error(errno, abs);
  auto names = read_names(fd, abs);
  if (!names) {
    ::close(fd);
    return names.error();
  }
  std::vector<dir_entry> entries;
  entries.reserve(names->size());
  for (auto& name : *names) {
    dir_entry entry;
    struct ::stat st;
    if (::fstatat(fd, name.c_str(), &st, 0) == 0) {
      entry.has_metadata = true;
      entry.is_dir = S_ISDIR(st.st_mode);
      entry.size = st.st_size < 0 ? 0 : static_cast<uint64_t>(st.st_size);
    }
    entry.name = std::move(name);
    entries.push_back(std::move(entry));
  }
  ::close(fd);
  return entries;
}

// -- tree_walker --------------------------------------------------------------

result<tree_walker> tree_walker::open(const std::string& abs_root,
                                      uint32_t max_depth) {
  if (auto valid = validate_path(abs_root); !valid)
    return valid.error();
  auto fd = ::open(abs_root.c_str(), dir_flags);
  if (fd < 0)
    return list_error(errno, abs_root);
  tree_walker w;
  w.root_ = abs_root;
  w.max_depth_ = max_depth;
  if (max_depth == 0) {
    // Nothing to list, but the root had to exist.
    ::close(fd);
    return w;
  }
  if (auto pushed = w.push_level(fd, ""); !pushed)
    return pushed.error();
  return w;
}

tree_walker::tree_walker(tree_walker&& other) noexcept
  : root_(std::move(other.root_)),
    max_depth_(other.max_depth_),
    fd_(std::exchange(other.fd_, -1)),
    stack_(std::move(other.stack_)),
    pending_dir_(std::move(other.pending_dir_)) {
  other.stack_.clear();
  other.pending_dir_.reset();
}

tree_walker& tree_walker::operator=(tree_walker&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    root_ = std::move(other.root_);
    max_depth_ = other.max_depth_;
    fd_ = std::exchange(other.fd_, -1);
    stack_ = std::move(other.stack_);
    pending_dir_ = std::move(other.pending_dir_);
    other.stack_.clear();
    other.pending_dir_.reset();
  }
  return *this;
}

tree_walker::~tree_walker() {
  if (fd_ >= 0)
    ::close(fd_);
}

result<void> tree_walker::push_level(int fd, std::string prefix) {
  auto abs = join(root_, prefix);
  struct ::stat st;
  if (::fstat(fd, &st) != 0) {
    auto err = list_error(errno, abs);
    ::close(fd);
    return fail(std::move(err));
  }
  auto names = read_names(fd, abs);
  if (!names) {
    ::close(fd);
    return fail(names.error());
  }
  // Only the deepest directory stays open: the memory and descriptor use of
  // the walk must not grow with the tree.
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = fd;
  stack_.push_back(
    level{std::move(prefix), std::move(*names), 0, st.st_dev, st.st_ino});
  return {};
}

result<void> tree_walker::pop_level() {
  if (stack_.size() == 1) {
    stack_.pop_back();
    ::close(std::exchange(fd_, -1));
    return {};
  }
  auto& parent = stack_[stack_.size() - 2];
  auto parent_abs = join(root_, parent.prefix);
  auto parent_fd = ::openat(fd_, "..", dir_flags);
  if (parent_fd < 0)
    return fail(list_error(errno, parent_abs));
  struct ::stat st;
  if (::fstat(parent_fd, &st) != 0 || st.st_dev != parent.dev
      || st.st_ino != parent.ino) {
    ::close(parent_fd);
    return fail(
      error{errc::io_error, fmt::format("list {}: the directory was moved or "
                                        "replaced during the walk",
                                        join(root_, stack_.back().prefix))});
  }
  ::close(fd_);
  fd_ = parent_fd;
  stack_.pop_back();
  return {};
}

error tree_walker::fail(error err) {
  if (fd_ >= 0)
    ::close(std::exchange(fd_, -1));
  stack_.clear();
  pending_dir_.reset();
  return err;
}

result<std::optional<frame>> tree_walker::next() {
  if (pending_dir_) {
    auto name = std::move(*pending_dir_);
    pending_dir_.reset();
    auto rel = join(stack_.back().prefix, name);
    // O_NOFOLLOW: the entry was a directory when it was reported; if it has
    // been swapped for a symlink since, it must not be entered.
    auto fd = ::openat(fd_, name.c_str(), dir_flags | O_NOFOLLOW);
    if (fd >= 0) {
      if (auto pushed = push_level(fd, std::move(rel)); !pushed)
        return pushed.error();
    } else if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) {
      // Vanished or replaced entries are skipped; anything else ends the
      // walk with an error naming the directory.
      return fail(list_error(errno, join(root_, rel)));
    }
  }
  while (!stack_.empty()) {
    auto& top = stack_.back();
    if (top.index == top.names.size()) {
      if (auto popped = pop_level(); !popped)
        return popped.error();
      continue;
    }
    // Move the name out: names already handed out need no memory.
    auto name = std::move(top.names[top.index++]);
    struct ::stat st;
    if (::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT)
        continue;
      return fail(list_error(errno, join(root_, join(top.prefix, name))));
    }
    frame f;
    f.path = join(top.prefix, name);
    f.kind = kind_of(st.st_mode);
    f.size = st.st_size < 0 ? 0 : static_cast<uint64_t>(st.st_size);
    // The root's children are at depth 1, i.e. the current stack size.
    if (f.kind == file_kind::dir && stack_.size() < max_depth_)
      pending_dir_ = name;
    f.name = std::move(name);
    return std::optional<frame>{std::move(f)};
  }
  return std::optional<frame>{};
}

} // namespace sandbox::fs
