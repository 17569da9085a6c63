#define CAF_SUITE libsandbox.fs_directories
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/fs/directories.hpp"

#include "libsandbox/fs_fixture.hpp"

using sandbox::fs::make_directories;
using sandbox::fs::testing::code_of;
using sandbox::fs::testing::temp_dir_fixture;

namespace {

bool is_dir(const std::string& p) {
  struct ::stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(fs_directories_tests, temp_dir_fixture)

CAF_TEST(make_directories creates every missing component) {
  // The one mkdir -p (code review #9).
  CAF_REQUIRE(make_directories(path("a/b//c/")));
  CAF_CHECK(is_dir(path("a/b/c")));
  CAF_CHECK(make_directories(path("a/b/c")));
  CAF_CHECK(make_directories(dir));
}

CAF_TEST(make_directories applies the mode to what it creates) {
  auto old = ::umask(022);
  CAF_REQUIRE(make_directories(path("m/n"), 0750));
  ::umask(old);
  struct ::stat st;
  CAF_REQUIRE_EQUAL(::stat(path("m/n").c_str(), &st), 0);
  CAF_CHECK_EQUAL(st.st_mode & 07777, 0750u);
  CAF_REQUIRE_EQUAL(::stat(path("m").c_str(), &st), 0);
  CAF_CHECK_EQUAL(st.st_mode & 07777, 0750u);
}

CAF_TEST(make_directories names the component that is not a directory) {
  put("file", "x");
  auto under = make_directories(path("file/sub/deeper"));
  CAF_REQUIRE_EQUAL(code_of(under), "path_not_found");
  CAF_CHECK_NOT_EQUAL(under.error().message.find(path("file/sub")),
                      std::string::npos);
  CAF_CHECK_NOT_EQUAL(under.error().message.find("Not a directory"),
                      std::string::npos);
  auto itself = make_directories(path("file"));
  CAF_REQUIRE_EQUAL(code_of(itself), "path_not_found");
  CAF_CHECK_NOT_EQUAL(itself.error().message.find(path("file")),
                      std::string::npos);
  CAF_CHECK_EQUAL(code_of(make_directories("")), "invalid_argument");
}

CAF_TEST(make_directories reports a parent it may not write) {
  CAF_REQUIRE_EQUAL(::chmod(dir.c_str(), 0755), 0);
  auto target = path("locked/x");
  auto verdict = sandbox::fs::testing::run_unprivileged([target] {
    auto res = make_directories(target);
    return code_of(res) == "permission_denied"
           && res.error().message.find("locked") != std::string::npos;
  });
  if (!verdict)
    CAF_MESSAGE("skipped: cannot drop privileges");
  else
    CAF_CHECK(*verdict);
}

CAF_TEST_FIXTURE_SCOPE_END()
