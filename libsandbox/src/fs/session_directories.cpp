#include "sandbox/fs/session_directories.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "sandbox/fs/directories.hpp"

namespace sandbox {

namespace {

/// Checks that `path` is a directory only the effective user can use.
result<void> check_private(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return make_errno_error(errno, fmt::format("cannot inspect {}", path));
  auto refuse = [&](std::string why) {
    return error{errc::permission_denied,
                 fmt::format("refusing {}: {}", path, why)};
  };
  if (S_ISLNK(st.st_mode))
    return refuse("it is a symlink, not a directory of its own");
  if (!S_ISDIR(st.st_mode))
    return refuse("it is not a directory");
  if (st.st_uid != ::geteuid())
    return refuse(
      fmt::format("owned by uid {}, not by uid {}", st.st_uid, ::geteuid()));
  if ((st.st_mode & 077) != 0)
    return refuse(fmt::format("mode {:04o} lets others in (expected {:04o})",
                              st.st_mode & 07777, private_directory_mode));
  return {};
}

} // namespace

result<void> make_private_directory(const std::string& path) {
  if (::mkdir(path.c_str(), private_directory_mode) == 0) {
    // The umask may have taken bits away; none may be added.
    ::chmod(path.c_str(), private_directory_mode);
  } else if (errno != EEXIST) {
    return make_errno_error(errno, fmt::format("cannot create {}", path));
  }
  return check_private(path);
}

result<std::string> current_directory() {
  std::vector<char> buf(PATH_MAX);
  while (::getcwd(buf.data(), buf.size()) == nullptr) {
    if (errno != ERANGE)
      return make_errno_error(errno, "cannot determine the current directory");
    buf.resize(buf.size() * 2);
  }
  return std::string{buf.data()};
}

result<std::string> make_directories(std::string path, std::string_view what) {
  if (path.empty())
    return error{errc::invalid_argument, fmt::format("{} is empty", what)};
  if (auto ok = fs::make_directories(path, session_directory_mode); !ok)
    return error{ok.error().code, fmt::format("cannot create {} {}: {}", what,
                                              path, ok.error().message)};
  return path;
}

std::string user_directory(std::string_view temp_directory) {
  return fmt::format("{}/sandbox-{}", temp_directory, ::geteuid());
}

std::string default_home(std::string_view temp_directory) {
  return user_directory(temp_directory) + "/home";
}

result<void> make_private_home(const std::string& home) {
  auto slash = home.rfind('/');
  auto parent = home.substr(0, slash == 0 ? 1 : slash);
  for (auto& dir : {parent, home})
    if (auto ok = make_private_directory(dir); !ok)
      return error{ok.error().code,
                   fmt::format("cannot prepare the default home {}: {}", home,
                               ok.error().message)};
  return {};
}

} // namespace sandbox
