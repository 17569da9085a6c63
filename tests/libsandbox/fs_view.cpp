#define CAF_SUITE libsandbox.fs_view
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The resolution and policy of a contained session's view
// (`fs::session_view`), with a scratch directory as the view's root: no
// namespace needed, so this runs on every host. Paths are those inside the
// root; the suite checks that nothing resolves outside it.

#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/fs/view.hpp"
#include "sandbox/process/proc_stats.hpp"

#include "libsandbox/fs_fixture.hpp"

using sandbox::errc;
using sandbox::fs::denial;
using sandbox::fs::session_view;
using sandbox::fs::view_policy;
using sandbox::fs::testing::code_of;
using sandbox::fs::testing::temp_dir_fixture;

namespace {

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

struct fixture : temp_dir_fixture {
  std::shared_ptr<const session_view> view;

  fixture() {
    for (auto d : {"w", "w/sub", "o", "secret", "home"})
      ::mkdir(path(d).c_str(), 0755);
    put("o/f", "outside");
    put("secret/f", "SECRET");
    put("w/mine", "mine");
    (void) ::symlink("/secret/f", path("w/to-secret").c_str());
    (void) ::symlink("/o", path("w/to-o").c_str());
    (void) ::symlink("sub", path("w/to-sub").c_str());
    (void) ::symlink("../../../../../../..", path("w/up").c_str());
    (void) ::symlink("loop", path("w/loop").c_str());
    view_policy policy;
    // A name no host has: the deny list is resolved as the host sees it.
    policy.deny = {"/secret"};
    policy.kept = {"/w", "/home"};
    policy.writable = {"/w", "/home"};
    auto v = session_view::open(dir, policy);
    if (!v)
      throw std::runtime_error(v.error().message);
    view = *v;
  }
};

/// The error of `r`, for checks on its code and message.
template <class T>
sandbox::error error_of(const sandbox::result<T>& r) {
  return r ? sandbox::error{} : r.error();
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(fs_view_tests, fixture)

CAF_TEST(reads resolve inside the root and refuse denied paths by name) {
  auto r = view->read_file("/o/f");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(*r, "outside");
  // Absolute symlinks start again at the view's root, `..` stops there.
  r = view->read_file("/w/up/o/f");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(*r, "outside");
  denial d;
  r = view->read_file("/w/to-secret", &d);
  CAF_CHECK_EQUAL(code_of(r), "permission_denied");
  CAF_CHECK(has(error_of(r).message, "/w/to-secret"));
  CAF_CHECK(has(error_of(r).message, "/secret/f"));
  CAF_CHECK_EQUAL(d.kind, denial::read_denied);
  CAF_CHECK_EQUAL(d.path, "/secret/f");
  CAF_CHECK_EQUAL(code_of(view->read_file("/secret/f")), "permission_denied");
  CAF_CHECK_EQUAL(code_of(view->read_file("/secret/missing")),
                  "permission_denied");
  CAF_CHECK_EQUAL(code_of(view->list_files("/secret")), "permission_denied");
  CAF_CHECK_EQUAL(code_of(view->open_walker("/w/up/secret", 3)),
                  "permission_denied");
  CAF_CHECK_EQUAL(code_of(view->stat("/secret/f")), "permission_denied");
  auto missing = view->read_file("/w/missing");
  CAF_CHECK_EQUAL(code_of(missing), "path_not_found");
  CAF_CHECK(has(error_of(missing).message, "read /w/missing"));
  CAF_CHECK(!has(error_of(missing).message, "/proc/self/fd"));
  auto dir_read = view->read_file("/w/sub");
  CAF_CHECK_EQUAL(code_of(dir_read), "not_a_regular_file");
  CAF_CHECK(has(error_of(dir_read).message, "read /w/sub"));
  CAF_CHECK(!has(error_of(dir_read).message, "/proc/self/fd"));
  CAF_CHECK_NOT_EQUAL(code_of(view->read_file("/w/loop")), "ok");
  CAF_CHECK_EQUAL(code_of(view->read_file("/w/mine/")), "path_not_found");
}

CAF_TEST(writes happen only below the writable directories) {
  denial d;
  auto w = view->write_file("/o/new", "x", {}, &d);
  CAF_CHECK_EQUAL(code_of(w), "permission_denied");
  CAF_CHECK(has(error_of(w).message, "/o/new"));
  CAF_CHECK_EQUAL(d.kind, denial::write_denied);
  CAF_CHECK(!exists(path("o/new")));
  CAF_CHECK_EQUAL(code_of(view->write_file("/w/to-o/new", "x", {})),
                  "permission_denied");
  CAF_CHECK_EQUAL(code_of(view->write_file("/w/up/o/new/deeper", "x", {})),
                  "permission_denied");
  CAF_CHECK(!exists(path("o/new")));
  CAF_CHECK_EQUAL(code_of(view->remove_file("/w/to-o/f")), "permission_denied");
  CAF_CHECK(exists(path("o/f")));
  CAF_CHECK_EQUAL(code_of(view->open_writer("/secret/f", {})),
                  "permission_denied");
  // Inside: parents made, through a relative symlink too.
  SANDBOX_CHECK_OK(view->write_file("/w/a/b/c", "abc", {}));
  CAF_CHECK(exists(path("w/a/b/c")));
  SANDBOX_CHECK_OK(view->write_file("/w/to-sub/x", "x", {}));
  CAF_CHECK(exists(path("w/sub/x")));
  SANDBOX_CHECK_OK(view->write_file("/home/h", "h", {}));
  // The link itself is replaced, never its target.
  SANDBOX_CHECK_OK(view->write_file("/w/to-secret", "mine", {}));
  auto secret = view->read_file("/w/to-secret");
  SANDBOX_REQUIRE_OK(secret);
  CAF_CHECK_EQUAL(*secret, "mine");
  CAF_CHECK(exists(path("secret/f")));
  // Compare-and-swap goes through the view like any write.
  auto st = view->stat("/w/a/b/c");
  SANDBOX_REQUIRE_OK(st);
  SANDBOX_CHECK_OK(view->write_file("/w/a/b/c", "v2", st->version));
  CAF_CHECK_EQUAL(code_of(view->write_file("/w/a/b/c", "v3", st->version)),
                  "conflict");
  SANDBOX_CHECK_OK(view->remove_file("/w/a/b/c"));
  CAF_CHECK(!exists(path("w/a/b/c")));
  // Paths naming a directory keep their POSIX answers.
  CAF_CHECK_EQUAL(code_of(view->write_file("/w/sub/", "x", {})),
                  "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(view->write_file("/w/new/", "x", {})),
                  "invalid_argument");
  CAF_CHECK_EQUAL(code_of(view->remove_file("/w/sub/")), "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(view->remove_file("/w/mine/")), "path_not_found");
  CAF_CHECK_EQUAL(code_of(view->write_file("/w/mine/x", "x", {})),
                  "path_not_found");
}

CAF_TEST(stat and listings show the view) {
  auto st = view->stat("/w/to-secret");
  SANDBOX_REQUIRE_OK(st);
  CAF_CHECK(st->kind == sandbox::fs::file_kind::symlink);
  auto entries = view->list_files("/w");
  SANDBOX_REQUIRE_OK(entries);
  for (auto& e : *entries) {
    if (e.name == "to-o")
      CAF_CHECK(e.has_metadata && e.is_dir);
    if (e.name == "to-secret")
      CAF_CHECK(!e.has_metadata);
  }
  auto walker = view->open_walker("/w/up/w", 2);
  SANDBOX_REQUIRE_OK(walker);
  size_t n = 0;
  for (;;) {
    auto f = walker->next();
    SANDBOX_REQUIRE_OK(f);
    if (!*f)
      break;
    ++n;
  }
  CAF_CHECK_EQUAL(n, 7u); // mine, sub, to-o, to-secret, to-sub, up, loop
}

CAF_TEST(the view leaks no descriptor) {
  auto before = sandbox::open_fd_count();
  for (int i = 0; i < 3; ++i) {
    (void) view->read_file("/w/up/o/f");
    (void) view->read_file("/w/to-secret");
    (void) view->write_file("/w/x/y/z", "x", {});
    (void) view->write_file("/o/z", "x", {});
    (void) view->list_files("/w");
    (void) view->stat("/w/x/y");
    (void) view->remove_file("/w/x/y/z");
    (void) view->read_file("/w/loop");
  }
  CAF_CHECK_EQUAL(sandbox::open_fd_count(), before);
}

CAF_TEST_FIXTURE_SCOPE_END()
