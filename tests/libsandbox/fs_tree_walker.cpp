#define CAF_SUITE libsandbox.fs_tree_walker
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/fs/listing.hpp"
#include "sandbox/process/proc_stats.hpp"

#include "libsandbox/fs_fixture.hpp"

using sandbox::open_fd_count;
using sandbox::resident_bytes;
using sandbox::fs::file_kind;
using sandbox::fs::frame;
using sandbox::fs::tree_walker;
using sandbox::fs::testing::code_of;
using sandbox::fs::testing::run_unprivileged;
using sandbox::fs::testing::temp_dir_fixture;

namespace {

// Walks `root` to the end; returns "path:kind" strings, and "!code" for an
// error (which ends the walk).
std::vector<std::string> walk(const std::string& root, uint32_t max_depth) {
  std::vector<std::string> result;
  auto walker = tree_walker::open(root, max_depth);
  if (!walker) {
    result.push_back("!" + code_of(walker));
    return result;
  }
  for (;;) {
    auto item = walker->next();
    if (!item) {
      result.push_back("!" + code_of(item));
      return result;
    }
    if (!*item)
      return result;
    result.push_back((*item)->path + ":"
                     + std::string{to_string((*item)->kind)});
  }
}

using strings = std::vector<std::string>;

} // namespace

CAF_TEST_FIXTURE_SCOPE(fs_tree_walker_tests, temp_dir_fixture)

CAF_TEST(the walk is depth first with siblings sorted by bytes) {
  // §16
  mkdir("b");
  mkdir("b/a");
  put("b/a/x", "");
  put("b/z", "");
  put("a", "");
  put("c", "");
  put("B", "");
  strings expected{"B:file",     "a:file",   "b:dir", "b/a:dir",
                   "b/a/x:file", "b/z:file", "c:file"};
  CAF_CHECK(walk(dir, 10) == expected);
}

CAF_TEST(frames carry name kind and size) {
  // §16
  mkdir("d");
  put("d/f", "12345");
  auto walker = tree_walker::open(dir, 5);
  CAF_REQUIRE(walker);
  auto first = walker->next();
  CAF_REQUIRE(first && *first);
  CAF_CHECK_EQUAL((*first)->path, "d");
  CAF_CHECK_EQUAL((*first)->name, "d");
  CAF_CHECK((*first)->kind == file_kind::dir);
  auto second = walker->next();
  CAF_REQUIRE(second && *second);
  CAF_CHECK_EQUAL((*second)->path, "d/f");
  CAF_CHECK_EQUAL((*second)->name, "f");
  CAF_CHECK((*second)->kind == file_kind::file);
  CAF_CHECK_EQUAL((*second)->size, 5u);
  auto end = walker->next();
  CAF_REQUIRE(end);
  CAF_CHECK(!*end);
  // Done is sticky.
  auto again = walker->next();
  CAF_REQUIRE(again);
  CAF_CHECK(!*again);
}

CAF_TEST(max_depth counts levels below the root) {
  // §16 and the CLI's --depth: 0 lists nothing, 1 the direct children.
  mkdir("d");
  mkdir("d/e");
  put("d/e/f", "");
  put("g", "");
  CAF_CHECK(walk(dir, 0).empty());
  CAF_CHECK(walk(dir, 1) == (strings{"d:dir", "g:file"}));
  CAF_CHECK(walk(dir, 2) == (strings{"d:dir", "d/e:dir", "g:file"}));
  CAF_CHECK(walk(dir, 3)
            == (strings{"d:dir", "d/e:dir", "d/e/f:file", "g:file"}));
}

CAF_TEST(symlinks are reported and never followed) {
  // §16: a link to its own directory cannot make the walk loop.
  mkdir("d");
  CAF_REQUIRE_EQUAL(::symlink(".", path("d/loop").c_str()), 0);
  CAF_REQUIRE_EQUAL(::symlink("..", path("d/up").c_str()), 0);
  CAF_REQUIRE_EQUAL(::symlink("d", path("link").c_str()), 0);
  CAF_CHECK(
    walk(dir, 1000)
    == (strings{"d:dir", "d/loop:symlink", "d/up:symlink", "link:symlink"}));
}

CAF_TEST(special files are of kind other) {
  // §16
  CAF_REQUIRE_EQUAL(::mkfifo(path("p").c_str(), 0600), 0);
  CAF_CHECK(walk(dir, 1) == (strings{"p:other"}));
}

CAF_TEST(a missing root or a file root is path_not_found) {
  // §16: the error comes from open, before any frame.
  CAF_CHECK(walk(path("missing"), 1) == (strings{"!path_not_found"}));
  CAF_CHECK(walk(path("missing"), 0) == (strings{"!path_not_found"}));
  put("file", "");
  CAF_CHECK(walk(path("file"), 1) == (strings{"!path_not_found"}));
}

CAF_TEST(a directory removed during the walk is skipped) {
  // §16: entries that vanish are not errors.
  mkdir("a");
  put("a/x", "");
  mkdir("b");
  auto walker = tree_walker::open(dir, 5);
  CAF_REQUIRE(walker);
  auto first = walker->next();
  CAF_REQUIRE(first && *first);
  CAF_CHECK_EQUAL((*first)->path, "a");
  std::filesystem::remove_all(path("a"));
  auto second = walker->next();
  CAF_REQUIRE(second && *second);
  CAF_CHECK_EQUAL((*second)->path, "b");
  auto end = walker->next();
  CAF_REQUIRE(end);
  CAF_CHECK(!*end);
}

CAF_TEST(an unreadable subdirectory ends the walk with an error) {
  // §16: the caller turns the error into the done frame's error. Root
  // ignores mode bits, so the walk runs as nobody in a child.
  CAF_REQUIRE_EQUAL(::chmod(dir.c_str(), 0755), 0);
  mkdir("a");
  put("a/x", "");
  mkdir("b-closed");
  put("b-closed/y", "");
  put("c", "");
  CAF_REQUIRE_EQUAL(::chmod(path("b-closed").c_str(), 0), 0);
  auto root = dir;
  auto closed = path("b-closed");
  auto verdict = run_unprivileged([&] {
    auto walker = tree_walker::open(root, 5);
    if (!walker)
      return false;
    std::vector<std::string> seen;
    for (;;) {
      auto item = walker->next();
      if (!item) {
        // The message names the directory; the walk is over afterwards.
        auto after = walker->next();
        return item.error().code == sandbox::errc::permission_denied
               && item.error().message.find(closed) != std::string::npos
               && seen == strings{"a", "a/x", "b-closed"} && after && !*after;
      }
      if (!*item)
        return false;
      seen.push_back((*item)->path);
    }
  });
  ::chmod(closed.c_str(), 0755);
  if (!verdict)
    CAF_MESSAGE("skipped: cannot drop privileges to nobody");
  else
    CAF_CHECK(*verdict);
}

CAF_TEST(a deep tree keeps a single directory open) {
  // §16: descending and climbing back through 100 levels.
  constexpr int depth = 100;
  std::string rel = "n";
  mkdir(rel);
  for (int i = 1; i < depth; ++i) {
    rel += "/n";
    mkdir(rel);
  }
  put("z", "");
  auto fds_before = open_fd_count();
  size_t max_fds = fds_before;
  auto walker = tree_walker::open(dir, depth + 1);
  CAF_REQUIRE(walker);
  std::vector<std::string> paths;
  for (;;) {
    auto item = walker->next();
    if (!item) {
      CAF_FAIL("walk failed: " << item.error().message);
    }
    if (!*item)
      break;
    paths.push_back((*item)->path);
    max_fds = std::max(max_fds, open_fd_count());
  }
  CAF_REQUIRE_EQUAL(paths.size(), static_cast<size_t>(depth + 1));
  CAF_CHECK_EQUAL(paths[depth - 1], rel);
  CAF_CHECK_EQUAL(paths[depth], "z");
  CAF_CHECK_LESS_OR_EQUAL(max_fds, fds_before + 1);
}

CAF_TEST(a large tree walks in bounded memory) {
  // §16: memory does not grow with the size of the tree. 100 directories
  // of 200 files each: 20,100 frames. The files are hard links to one file
  // outside the tree: creating 20,000 inodes takes seconds on a loaded
  // ext4, creating 20,000 names does not.
  constexpr int dirs = 100;
  constexpr int files_per_dir = 200;
  put("source", "x");
  mkdir("tree");
  auto source = path("source");
  int create_failures = 0;
  for (int d = 0; d < dirs; ++d) {
    auto sub = "tree/d" + std::to_string(d);
    mkdir(sub);
    for (int f = 0; f < files_per_dir; ++f) {
      auto name = path(sub + "/f" + std::to_string(f));
      if (::link(source.c_str(), name.c_str()) == 0)
        continue;
      // Some file systems cap the number of links: fall back to files.
      auto fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
      if (fd < 0)
        ++create_failures;
      else
        ::close(fd);
    }
  }
  CAF_REQUIRE_EQUAL(create_failures, 0);
  auto start = std::chrono::steady_clock::now();
  auto fds_before = open_fd_count();
  auto rss_before = resident_bytes();
  auto rss_peak = rss_before;
  size_t max_fds = fds_before;
  size_t count = 0;
  auto walker = tree_walker::open(path("tree"), 100);
  CAF_REQUIRE(walker);
  for (;;) {
    auto item = walker->next();
    if (!item) {
      CAF_FAIL("walk failed: " << item.error().message);
    }
    if (!*item)
      break;
    if (++count % 1000 == 0) {
      rss_peak = std::max(rss_peak, resident_bytes());
      max_fds = std::max(max_fds, open_fd_count());
    }
  }
  auto elapsed = std::chrono::steady_clock::now() - start;
  CAF_CHECK_EQUAL(count, static_cast<size_t>(dirs * (files_per_dir + 1)));
  CAF_CHECK_LESS(rss_peak - rss_before, size_t{32} * 1024 * 1024);
  // One open directory at a time: the walker adds a single descriptor.
  CAF_CHECK_LESS_OR_EQUAL(max_fds, fds_before + 1);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(elapsed);
  CAF_CHECK_LESS(ms.count(), 5000);
  CAF_MESSAGE("walked " << count << " entries in " << ms.count()
                        << " ms, RSS grew by " << (rss_peak - rss_before) / 1024
                        << " KiB");
}

CAF_TEST_FIXTURE_SCOPE_END()
