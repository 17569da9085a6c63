#define CAF_SUITE libsandbox.fs_stat
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/stat.hpp"

#include "libsandbox/fs_fixture.hpp"

using sandbox::errc;
using sandbox::fs::file_kind;
using sandbox::fs::stat_path;
using sandbox::fs::testing::code_of;
using sandbox::fs::testing::temp_dir_fixture;

namespace {

bool is_hex16(const std::string& x) {
  return x.size() == 16
         && x.find_first_not_of("0123456789abcdef") == std::string::npos;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(fs_stat_tests, temp_dir_fixture)

CAF_TEST(stat reports kind size mtime dev and inode of a file) {
  // §17
  put("f", "hello");
  auto st = stat_path(path("f"));
  CAF_REQUIRE(st);
  struct ::stat raw;
  CAF_REQUIRE_EQUAL(::lstat(path("f").c_str(), &raw), 0);
  CAF_CHECK(st->kind == file_kind::file);
  CAF_CHECK_EQUAL(st->size, 5u);
  CAF_CHECK_EQUAL(st->dev, static_cast<uint64_t>(raw.st_dev));
  CAF_CHECK_EQUAL(st->ino, static_cast<uint64_t>(raw.st_ino));
  CAF_CHECK_EQUAL(st->mtime_ns,
                  raw.st_mtim.tv_sec * 1'000'000'000LL + raw.st_mtim.tv_nsec);
  CAF_CHECK(is_hex16(st->version));
}

CAF_TEST(the version is stable while nothing changes) {
  // §17
  put("f", "same");
  auto a = stat_path(path("f"));
  auto b = stat_path(path("f"));
  CAF_REQUIRE(a && b);
  CAF_CHECK_EQUAL(a->version, b->version);
  // Reading does not change the version either.
  CAF_REQUIRE(sandbox::fs::read_file(path("f")));
  auto c = stat_path(path("f"));
  CAF_REQUIRE(c);
  CAF_CHECK_EQUAL(a->version, c->version);
}

CAF_TEST(the version changes with content of the same size) {
  // §17: an in-place rewrite keeps size and inode; its new mtime must show.
  // The mtime is set explicitly so the test does not depend on the file
  // system's timestamp granularity.
  put("f", "aaaa");
  auto before = stat_path(path("f"));
  CAF_REQUIRE(before);
  auto fd = ::open(path("f").c_str(), O_WRONLY);
  CAF_REQUIRE(fd >= 0);
  CAF_REQUIRE_EQUAL(::pwrite(fd, "bbbb", 4, 0), 4);
  struct timespec times[2];
  times[0].tv_nsec = UTIME_OMIT;
  auto mtime = before->mtime_ns + 1000;
  times[1].tv_sec = mtime / 1'000'000'000;
  times[1].tv_nsec = mtime % 1'000'000'000;
  CAF_REQUIRE_EQUAL(::futimens(fd, times), 0);
  ::close(fd);
  auto after = stat_path(path("f"));
  CAF_REQUIRE(after);
  CAF_CHECK_EQUAL(after->size, before->size);
  CAF_CHECK_EQUAL(after->ino, before->ino);
  CAF_CHECK_NOT_EQUAL(after->version, before->version);
}

CAF_TEST(the version changes after an atomic rewrite of the same size) {
  // §17 + §13: a replacing write creates a new inode, so even two writes in
  // the same timestamp tick give different versions.
  CAF_REQUIRE(sandbox::fs::write_file(path("f"), "aaaa"));
  auto before = stat_path(path("f"));
  CAF_REQUIRE(sandbox::fs::write_file(path("f"), "bbbb"));
  auto after = stat_path(path("f"));
  CAF_REQUIRE(before && after);
  CAF_CHECK_NOT_EQUAL(after->version, before->version);
}

CAF_TEST(the version changes after chmod) {
  // §17: metadata changes count, chmod included.
  put("f", "x");
  auto before = stat_path(path("f"));
  CAF_REQUIRE(before);
  CAF_REQUIRE_EQUAL(::chmod(path("f").c_str(), 0600), 0);
  auto after = stat_path(path("f"));
  CAF_REQUIRE(after);
  CAF_CHECK_NOT_EQUAL(after->version, before->version);
}

CAF_TEST(a symlink is reported as a symlink and not followed) {
  // §17 / CLI stat: the path itself, lstat semantics.
  put("target", "0123456789");
  CAF_REQUIRE_EQUAL(::symlink("target", path("link").c_str()), 0);
  CAF_REQUIRE_EQUAL(::symlink("nowhere", path("dangling").c_str()), 0);
  auto link = stat_path(path("link"));
  CAF_REQUIRE(link);
  CAF_CHECK(link->kind == file_kind::symlink);
  CAF_CHECK_EQUAL(link->size, 6u); // strlen("target")
  auto dangling = stat_path(path("dangling"));
  CAF_REQUIRE(dangling);
  CAF_CHECK(dangling->kind == file_kind::symlink);
}

CAF_TEST(a trailing slash follows a symlink and requires a directory) {
  // A15: POSIX resolves "link/" to the directory the link points to, and
  // "file/" fails with "Not a directory".
  mkdir("d");
  put("f", "x");
  CAF_REQUIRE_EQUAL(::symlink("d", path("dirlink").c_str()), 0);
  auto through = stat_path(path("dirlink/"));
  CAF_REQUIRE(through);
  CAF_CHECK(through->kind == file_kind::dir);
  auto file = stat_path(path("f/"));
  CAF_REQUIRE(!file);
  CAF_CHECK(file.error().code == sandbox::errc::path_not_found);
  CAF_CHECK_NOT_EQUAL(file.error().message.find("Not a directory"),
                      std::string::npos);
}

CAF_TEST(directories and special files have their own kinds) {
  // §17
  mkdir("d");
  CAF_REQUIRE_EQUAL(::mkfifo(path("p").c_str(), 0600), 0);
  auto d = stat_path(path("d"));
  auto p = stat_path(path("p"));
  auto null = stat_path("/dev/null");
  CAF_REQUIRE(d && p && null);
  CAF_CHECK(d->kind == file_kind::dir);
  CAF_CHECK(p->kind == file_kind::other);
  CAF_CHECK(null->kind == file_kind::other);
  CAF_CHECK_EQUAL(sandbox::fs::to_string(file_kind::dir), "dir");
  CAF_CHECK_EQUAL(sandbox::fs::to_string(file_kind::symlink), "symlink");
}

CAF_TEST(stat of a missing path is path_not_found naming the path) {
  // §17
  auto st = stat_path(path("missing"));
  CAF_CHECK_EQUAL(code_of(st), "path_not_found");
  if (!st)
    CAF_CHECK_NOT_EQUAL(st.error().message.find(path("missing")),
                        std::string::npos);
  CAF_CHECK_EQUAL(code_of(stat_path("")), "invalid_argument");
}

CAF_TEST_FIXTURE_SCOPE_END()
