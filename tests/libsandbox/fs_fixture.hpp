#pragma once

// Shared helpers of the libsandbox.fs_* suites: a fresh temporary directory
// per test and a way to run a check without root's privileges.

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/quiet_fork.hpp"
#include "sandbox/errc.hpp"

namespace sandbox::fs::testing {

/// Creates a fresh directory under $TMPDIR (or /tmp) with mkdtemp and
/// removes it, with everything in it, on destruction.
struct temp_dir_fixture {
  std::string dir;

  temp_dir_fixture() {
    auto* tmp = std::getenv("TMPDIR");
    std::string tmpl = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
    tmpl += "/sandbox-fs-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
  }

  ~temp_dir_fixture() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  /// Returns the absolute path of `rel` inside the temporary directory.
  std::string path(std::string_view rel) const {
    return dir + "/" + std::string{rel};
  }

  /// Creates (or truncates) the file `rel` with `content`, bypassing the
  /// code under test.
  void put(std::string_view rel, std::string_view content) const {
    auto fd = ::open(path(rel).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
      throw std::runtime_error("cannot create " + path(rel));
    auto n = ::write(fd, content.data(), content.size());
    ::close(fd);
    if (n != static_cast<ssize_t>(content.size()))
      throw std::runtime_error("cannot write " + path(rel));
  }

  /// Creates the directory `rel`.
  void mkdir(std::string_view rel) const {
    if (::mkdir(path(rel).c_str(), 0755) != 0)
      throw std::runtime_error("cannot mkdir " + path(rel));
  }
};

/// Returns the error code name of `res`, or "ok".
template <class T>
std::string code_of(const result<T>& res) {
  return res ? std::string{"ok"} : std::string{to_string(res.error().code)};
}

/// Runs `check` in a child process as an unprivileged user (nobody), since
/// root ignores permission bits. Returns the child's verdict, or nullopt
/// when privileges cannot be dropped (the caller then skips the check).
inline std::optional<bool>
run_unprivileged(const std::function<bool()>& check) {
  auto pid = sandbox::test::quiet_fork();
  if (pid < 0)
    return std::nullopt;
  if (pid == 0) {
    if (::geteuid() == 0) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0
          || ::setuid(65534) != 0)
        ::_exit(77);
    }
    ::_exit(check() ? 0 : 1);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
    return false;
  if (WEXITSTATUS(status) == 77)
    return std::nullopt;
  return WEXITSTATUS(status) == 0;
}

} // namespace sandbox::fs::testing
