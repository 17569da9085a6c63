#pragma once

// A scratch directory for one test, shared by every test area.

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

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

/// A scratch directory in the current directory (the build tree), not
/// under /tmp: a contained session's /tmp is its own, so what lies in the
/// host's /tmp is not in its view at all, and a write there lands in its
/// private /tmp. Paths a contained session sees but may not
/// change live here.
struct outside_dir {
  std::string path;

  outside_dir() {
    char tmpl[] = "sandbox-outside-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr)
      throw std::runtime_error("mkdtemp failed in the current directory");
    char real[PATH_MAX];
    if (::realpath(tmpl, real) == nullptr)
      throw std::runtime_error("realpath failed");
    path = real;
  }

  ~outside_dir() {
    std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0)
      return;
  }
};

} // namespace sandbox::test
