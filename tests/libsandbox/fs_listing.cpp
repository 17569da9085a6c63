#define CAF_SUITE libsandbox.fs_listing
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/fs/listing.hpp"
#include "sandbox/process/proc_stats.hpp"

#include "libsandbox/fs_fixture.hpp"

using sandbox::open_fd_count;
using sandbox::fs::dir_entry;
using sandbox::fs::list_files;
using sandbox::fs::testing::code_of;
using sandbox::fs::testing::run_unprivileged;
using sandbox::fs::testing::temp_dir_fixture;

namespace {

std::vector<std::string> names_of(const std::vector<dir_entry>& entries) {
  std::vector<std::string> result;
  for (auto& entry : entries)
    result.push_back(entry.name);
  return result;
}

const dir_entry* find(const std::vector<dir_entry>& entries,
                      const std::string& name) {
  for (auto& entry : entries)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(fs_listing_tests, temp_dir_fixture)

CAF_TEST(entries are sorted by bytes without dot entries) {
  // §15 and the CLI rule: strcmp order, not the locale's.
  for (auto name : {"B", "a", "_", "\xc3\xa9", "10", "9"})
    put(name, "");
  auto entries = list_files(dir);
  CAF_REQUIRE(entries);
  std::vector<std::string> expected{"10", "9", "B", "_", "a", "\xc3\xa9"};
  CAF_CHECK(names_of(*entries) == expected);
}

CAF_TEST(entries carry is_dir and size) {
  // §15
  put("file", "12345");
  mkdir("sub");
  CAF_REQUIRE_EQUAL(::symlink("sub", path("link-to-dir").c_str()), 0);
  CAF_REQUIRE_EQUAL(::symlink("file", path("link-to-file").c_str()), 0);
  auto entries = list_files(dir);
  CAF_REQUIRE(entries);
  CAF_REQUIRE_EQUAL(entries->size(), 4u);
  auto* file = find(*entries, "file");
  auto* sub = find(*entries, "sub");
  auto* link_dir = find(*entries, "link-to-dir");
  auto* link_file = find(*entries, "link-to-file");
  CAF_REQUIRE(file && sub && link_dir && link_file);
  CAF_CHECK(file->has_metadata && !file->is_dir);
  CAF_CHECK_EQUAL(file->size, 5u);
  CAF_CHECK(sub->has_metadata && sub->is_dir);
  // Metadata follows symlinks, as is_dir does in the frameworks we match.
  CAF_CHECK(link_dir->has_metadata && link_dir->is_dir);
  CAF_CHECK(link_file->has_metadata && !link_file->is_dir);
  CAF_CHECK_EQUAL(link_file->size, 5u);
}

CAF_TEST(an entry without readable metadata is still listed) {
  // §15: a dangling symlink has no metadata to follow to.
  put("a", "x");
  CAF_REQUIRE_EQUAL(::symlink("nowhere", path("b-dangling").c_str()), 0);
  CAF_REQUIRE_EQUAL(::symlink("c-loop", path("c-loop").c_str()), 0);
  auto entries = list_files(dir);
  CAF_REQUIRE(entries);
  CAF_REQUIRE_EQUAL(entries->size(), 3u);
  CAF_CHECK((*entries)[0].has_metadata);
  CAF_CHECK_EQUAL((*entries)[1].name, "b-dangling");
  CAF_CHECK(!(*entries)[1].has_metadata);
  CAF_CHECK_EQUAL((*entries)[2].name, "c-loop");
  CAF_CHECK(!(*entries)[2].has_metadata);
}

CAF_TEST(an empty directory lists nothing) {
  // §15
  auto entries = list_files(dir);
  CAF_REQUIRE(entries);
  CAF_CHECK(entries->empty());
}

CAF_TEST(a missing path or a file is path_not_found) {
  // §15
  auto missing = list_files(path("missing"));
  CAF_REQUIRE_EQUAL(code_of(missing), "path_not_found");
  CAF_CHECK_NOT_EQUAL(missing.error().message.find(path("missing")),
                      std::string::npos);
  put("file", "x");
  CAF_CHECK_EQUAL(code_of(list_files(path("file"))), "path_not_found");
  CAF_CHECK_EQUAL(code_of(list_files("")), "invalid_argument");
}

CAF_TEST(permission errors propagate as themselves) {
  // §15. Root ignores mode bits, so the checks run as nobody in a child.
  CAF_REQUIRE_EQUAL(::chmod(dir.c_str(), 0755), 0);
  mkdir("closed");
  mkdir("readonly");
  put("readonly/entry", "x");
  CAF_REQUIRE_EQUAL(::chmod(path("closed").c_str(), 0), 0);
  // Readable but not searchable: names can be read, metadata cannot.
  CAF_REQUIRE_EQUAL(::chmod(path("readonly").c_str(), 0444), 0);
  auto closed = path("closed");
  auto readonly = path("readonly");
  auto verdict = run_unprivileged([&] {
    auto denied = list_files(closed);
    auto partial = list_files(readonly);
    return code_of(denied) == "permission_denied" && partial
           && partial->size() == 1 && (*partial)[0].name == "entry"
           && !(*partial)[0].has_metadata;
  });
  // Let the fixture clean up even when not running as root.
  ::chmod(closed.c_str(), 0755);
  ::chmod(readonly.c_str(), 0755);
  if (!verdict)
    CAF_MESSAGE("skipped: cannot drop privileges to nobody");
  else
    CAF_CHECK(*verdict);
}

CAF_TEST(listing leaves no descriptor open) {
  // Neither success nor failure leaks descriptors.
  put("f", "x");
  auto before = open_fd_count();
  for (auto p : {"", "/f", "/missing"})
    list_files(dir + p);
  for (auto depth : {0u, 1u, 2u}) {
    for (auto p : {"", "/f", "/missing"}) {
      auto walker = sandbox::fs::tree_walker::open(dir + p, depth);
      if (walker) {
        // Abandon the walk half way: the destructor closes the directory.
        walker->next();
      }
    }
  }
  CAF_CHECK_EQUAL(open_fd_count(), before);
}

CAF_TEST_FIXTURE_SCOPE_END()
