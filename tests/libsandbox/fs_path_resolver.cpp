#define CAF_SUITE libsandbox.fs_path_resolver
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <string>

#include "sandbox/fs/path_resolver.hpp"

using sandbox::fs::names_directory;
using sandbox::fs::resolve;
using sandbox::fs::resolve_keeping_slash;
using sandbox::fs::validate_path;

// Semantics §27: paths are relative to the session working directory;
// absolute paths are allowed.

CAF_TEST(relative paths resolve against the base directory) {
  CAF_CHECK_EQUAL(resolve("/work", "a.txt"), "/work/a.txt");
  CAF_CHECK_EQUAL(resolve("/work/", "src/main.cpp"), "/work/src/main.cpp");
  CAF_CHECK_EQUAL(resolve("/work", ""), "/work");
  CAF_CHECK_EQUAL(resolve("/", "x"), "/x");
}

CAF_TEST(absolute paths replace the base directory) {
  CAF_CHECK_EQUAL(resolve("/work", "/etc/hosts"), "/etc/hosts");
  CAF_CHECK_EQUAL(resolve("/work", "/"), "/");
}

CAF_TEST(dots and slashes are normalised lexically) {
  CAF_CHECK_EQUAL(resolve("/work", "./a//b/./c/"), "/work/a/b/c");
  CAF_CHECK_EQUAL(resolve("/work", "a/../b"), "/work/b");
  CAF_CHECK_EQUAL(resolve("/work", "../other"), "/other");
  CAF_CHECK_EQUAL(resolve("/work/x", "../../.."), "/");
  CAF_CHECK_EQUAL(resolve("/", "../../etc"), "/etc");
  CAF_CHECK_EQUAL(resolve("/work", "."), "/work");
}

CAF_TEST(relative bases give relative results) {
  CAF_CHECK_EQUAL(resolve("", "a/./b"), "a/b");
  CAF_CHECK_EQUAL(resolve("base", "../../x"), "../x");
  CAF_CHECK_EQUAL(resolve("a", ".."), ".");
}

CAF_TEST(paths that can only name a directory keep a trailing slash) {
  // A15: "f/" must stay "f/" so that the system call requires a directory.
  CAF_CHECK_EQUAL(resolve_keeping_slash("/work", "f/"), "/work/f/");
  CAF_CHECK_EQUAL(resolve_keeping_slash("/work", "f//"), "/work/f/");
  CAF_CHECK_EQUAL(resolve_keeping_slash("/work", "f/."), "/work/f/");
  CAF_CHECK_EQUAL(resolve_keeping_slash("/work", "a/b/.."), "/work/a/");
  CAF_CHECK_EQUAL(resolve_keeping_slash("/work", "."), "/work/");
  CAF_CHECK_EQUAL(resolve_keeping_slash("/work", "/"), "/");
  CAF_CHECK_EQUAL(resolve_keeping_slash("/work", "/x/../"), "/");
  CAF_CHECK_EQUAL(resolve_keeping_slash("/work", "f"), "/work/f");
  CAF_CHECK_EQUAL(resolve_keeping_slash("/work", "a/./f"), "/work/a/f");
  CAF_CHECK(names_directory("f/"));
  CAF_CHECK(names_directory(".."));
  CAF_CHECK(names_directory("a/."));
  CAF_CHECK(!names_directory("a/.f"));
  CAF_CHECK(!names_directory("a/..f"));
  CAF_CHECK(!names_directory(""));
}

CAF_TEST(empty paths and paths with NUL bytes are invalid) {
  auto empty = validate_path("");
  CAF_REQUIRE(!empty);
  CAF_CHECK(empty.error().code == sandbox::errc::invalid_argument);
  using namespace std::string_literals;
  auto nul = validate_path("/tmp/a\0b"s);
  CAF_REQUIRE(!nul);
  CAF_CHECK(nul.error().code == sandbox::errc::invalid_argument);
  CAF_CHECK_NOT_EQUAL(nul.error().message.find("/tmp/a\\0b"),
                      std::string::npos);
  CAF_CHECK(validate_path("relative/ok"));
  CAF_CHECK(validate_path("/abs/ok"));
}
