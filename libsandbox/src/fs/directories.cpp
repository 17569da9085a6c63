#include "sandbox/fs/directories.hpp"

#include <cerrno>

#include <sys/stat.h>

#include <fmt/format.h>

#include "sandbox/fs/path_resolver.hpp"

namespace sandbox::fs {

namespace {

error mkdir_error(int err, const std::string& dir) {
  return make_errno_error(err, fmt::format("create directory {}", dir));
}

// Succeeds when `dir` names a directory (symlinks followed).
result<void> check_directory(const std::string& dir) {
  struct ::stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return mkdir_error(errno, dir);
  if (!S_ISDIR(st.st_mode))
    return mkdir_error(ENOTDIR, dir);
  return {};
}

} // namespace

result<void> make_directories(const std::string& path, mode_t mode) {
  if (auto valid = validate_path(path); !valid)
    return valid.error();
  // The common cases first: the directory exists, or only its last
  // component is missing.
  if (::mkdir(path.c_str(), mode) == 0)
    return {};
  if (errno == EEXIST)
    return check_directory(path);
  if (errno != ENOENT)
    return mkdir_error(errno, path);
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/')
      continue;
    if (path[pos - 1] == '/')
      continue; // "a//b": the prefix "a/" was handled as "a"
    auto prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST)
      return mkdir_error(errno, prefix);
  }
  return check_directory(path);
}

} // namespace sandbox::fs
