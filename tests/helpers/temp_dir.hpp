#pragma once

// A scratch directory for one test, shared by every test area.

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace sandbox::test {

/// A fresh directory under $TMPDIR (/tmp when unset), as an absolute path
/// without symbolic links, searchable by every user (tests that run the
/// CLI as another user need that); removed with its contents at the end of
/// the test.
struct temp_dir {
  std::string path;

  temp_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string{base != nullptr && *base != '\0' ? base
                                                                    : "/tmp"}
                       + "/sandbox-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed in " + tmpl);
    char real[PATH_MAX];
    path = ::realpath(tmpl.c_str(), real) != nullptr ? real : tmpl;
    ::chmod(path.c_str(), 0755);
  }

  ~temp_dir() {
    std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0)
      return; // a leftover scratch directory is not worth failing a test
  }

  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  /// `rel` inside the directory.
  std::string at(const std::string& rel) const {
    return path + "/" + rel;
  }
};

/// Whether `path` (absolute, without symbolic links) is below /tmp, which
/// a contained session replaces with a /tmp of its own: what lies there on
/// the host is out of the session's sight.
inline bool below_tmp(const std::string& path) {
  return path == "/tmp" || path.rfind("/tmp/", 0) == 0;
}

/// Where tests keep what a contained session must see on the host but may
/// not change: the current directory (the build tree), or /var/tmp when
/// the build tree is below /tmp (a checkout cloned there).
inline std::string visible_base() {
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr)
    throw std::runtime_error("getcwd failed");
  return below_tmp(cwd) ? std::string{"/var/tmp"} : std::string{cwd};
}

/// A scratch directory a contained session sees but may not change (in
/// `visible_base()`); removed with its contents at the end of the test.
struct outside_dir {
  std::string path;

  outside_dir() {
    auto tmpl = visible_base() + "/sandbox-outside-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed in " + tmpl);
    char real[PATH_MAX];
    if (::realpath(tmpl.c_str(), real) == nullptr)
      throw std::runtime_error("realpath failed");
    path = real;
    // A session with ids of its own searches it to reach its directories
    // below (the node's base directory in some suites), not lists it.
    ::chmod(path.c_str(), 0711);
  }

  ~outside_dir() {
    std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0)
      return;
  }

  outside_dir(const outside_dir&) = delete;
  outside_dir& operator=(const outside_dir&) = delete;
};

/// A test program that commands inside sessions run (the test child):
/// `built` itself, or, when the build tree is below /tmp and so out of a
/// contained session's sight, a copy in an `outside_dir` kept until the
/// test program exits.
inline std::string visible_program(const std::string& built) {
  if (!below_tmp(built))
    return built;
  static outside_dir copies;
  auto name = built.substr(built.rfind('/') + 1);
  auto copy = copies.path + "/" + name;
  if (::access(copy.c_str(), X_OK) != 0) {
    std::string cmd = "cp '" + built + "' '" + copy + "'";
    if (std::system(cmd.c_str()) != 0)
      throw std::runtime_error("cannot copy " + built + " to " + copy);
  }
  return copy;
}

/// The directories of the suppression files the sanitizer options of this
/// process name (`suppressions=` in ASAN_OPTIONS, LSAN_OPTIONS,
/// UBSAN_OPTIONS, TSAN_OPTIONS): a sanitized program that runs in a
/// contained session is passed these options and dies when it cannot read
/// the files, so they must be in its view. Empty in a plain build.
inline std::vector<std::string> sanitizer_directories() {
  std::vector<std::string> out;
  for (auto* var :
       {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"}) {
    auto* value = std::getenv(var);
    if (value == nullptr)
      continue;
    std::string opts = value;
    for (size_t at = opts.find("suppressions="); at != std::string::npos;
         at = opts.find("suppressions=", at + 1)) {
      auto begin = at + 13;
      auto path = opts.substr(begin, opts.find(':', begin) - begin);
      auto dir = path.substr(0, path.rfind('/'));
      if (!dir.empty() && dir[0] == '/'
          && std::find(out.begin(), out.end(), dir) == out.end())
        out.push_back(dir);
    }
  }
  return out;
}

/// CLI options that put the directory of `program` (a `visible_program`)
/// into the view of the contained sessions a command creates (and the
/// sanitizers' suppression files, `sanitizer_directories`): a view holds
/// the system's parts and the session's directories only
/// (docs/security.md).
inline std::string allow_program(const std::string& program) {
  auto out = " --allow-read '" + program.substr(0, program.rfind('/')) + "' ";
  for (auto& dir : sanitizer_directories())
    out += "--allow-read '" + dir + "' ";
  return out;
}

} // namespace sandbox::test
