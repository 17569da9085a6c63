#define CAF_SUITE libsandbox.syscall_watch_walk
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The walk with which the watch of contained commands tells where a path
// leads (contain/view_walk.hpp): as the kernel resolves it, inside the
// root it is given, one descriptor per component, and bounded: the chain
// of links into a 1900-deep tree of reliability A6 (which cost the node's
// reactor ~10 s per call) costs at most the limits' steps.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "contain/view_walk.hpp"
#include "helpers/temp_dir.hpp"
#include "sandbox/unique_fd.hpp"

using sandbox::detail::view_walk;
using sandbox::detail::walk_view;

namespace {

struct fixture {
  sandbox::test::temp_dir dir;
  sandbox::unique_fd root;

  fixture() {
    root.reset(::open(dir.path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    CAF_REQUIRE(root);
  }

  void mkdir(const std::string& p) {
    if (::mkdir((dir.path + p).c_str(), 0755) != 0)
      CAF_FAIL("mkdir " << p);
  }

  void link(const std::string& target, const std::string& p) {
    if (::symlink(target.c_str(), (dir.path + p).c_str()) != 0)
      CAF_FAIL("symlink " << p);
  }

  view_walk walk(const std::string& p, bool follow_last = true) {
    return walk_view(root.get(), p, follow_last);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(syscall_watch_walk_tests, fixture)

CAF_TEST(a walk follows links as the kernel does inside its root) {
  mkdir("/a");
  mkdir("/a/b");
  mkdir("/c");
  link("b", "/a/rel");            // relative
  link("/c", "/a/abs");           // absolute: from the root given
  link("../../../../c", "/a/up"); // never above the root
  link("/a/rel", "/chain");
  CAF_CHECK_EQUAL(walk("/a/rel/x").path, "/a/b/x");
  CAF_CHECK_EQUAL(walk("/a/abs/x").path, "/c/x");
  CAF_CHECK_EQUAL(walk("/a/up/x").path, "/c/x");
  CAF_CHECK_EQUAL(walk("/chain/../c").path, "/a/c");
  CAF_CHECK_EQUAL(walk("/a/./b/../abs").path, "/c");
  // The last link only when asked.
  CAF_CHECK_EQUAL(walk("/a/abs", false).path, "/a/abs");
  // What does not exist is taken as it is, and so is what follows it.
  CAF_CHECK_EQUAL(walk("/missing/rel/../x").path, "/missing/x");
  CAF_CHECK_EQUAL(walk("/a/rel/missing/../../abs/y").path, "/c/y");
  CAF_CHECK(walk("/a/rel").status == view_walk::resolved);
}

CAF_TEST(a walk stops after forty links) {
  mkdir("/l");
  for (int i = 0; i < 41; ++i)
    link("l" + std::to_string(i + 1), "/l/l" + std::to_string(i));
  auto w = walk("/l/l0");
  CAF_CHECK(w.status == view_walk::too_many_links);
  CAF_CHECK(w.path.empty());
  // Forty are followed.
  CAF_CHECK_EQUAL(walk("/l/l1").path, "/l/l41");
}

CAF_TEST(a chain of links into a deep tree costs bounded steps) {
  // Reliability A6: 1900 directories deep, and in the deepest 40 links,
  // each to the next one through the whole depth.
  std::string deep;
  for (int i = 0; i < 1900; ++i) {
    deep += "/d";
    mkdir(deep);
  }
  for (int i = 0; i < 40; ++i)
    link(deep + "/L" + std::to_string(i + 1), deep + "/L" + std::to_string(i));
  auto w = walk(deep + "/L0");
  // The kernel's ELOOP is 40 links away, some 76,000 components: the walk
  // gives up at 4096.
  CAF_CHECK(w.status == view_walk::too_long);
  CAF_MESSAGE(w.steps << " steps");
  CAF_CHECK_LESS_OR_EQUAL(w.steps, 4096u + 40u);
  // Without following the last one, the tree itself resolves at one step
  // per component.
  auto plain = walk(deep + "/L0", false);
  CAF_CHECK(plain.status == view_walk::resolved);
  CAF_CHECK_EQUAL(plain.path, deep + "/L0");
  CAF_CHECK_LESS_OR_EQUAL(plain.steps, 1900u);
}

CAF_TEST_FIXTURE_SCOPE_END()
