#define CAF_SUITE libsandbox.fs_atomic_writer
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"
#include "helpers/quiet_fork.hpp"

#include <string>
#include <vector>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/stat.hpp"

#include "libsandbox/fs_fixture.hpp"

using sandbox::fs::atomic_writer;
using sandbox::fs::read_file;
using sandbox::fs::stat_path;
using sandbox::fs::write_file;
using sandbox::fs::testing::code_of;
using sandbox::fs::testing::temp_dir_fixture;

namespace {

// Names in `dir`, without . and .., in readdir order.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> result;
  auto* d = ::opendir(dir.c_str());
  if (d == nullptr)
    return result;
  while (auto* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    if (name != "." && name != "..")
      result.push_back(name);
  }
  ::closedir(d);
  return result;
}

std::string content_of(const std::string& abs) {
  auto got = read_file(abs);
  return got ? *got : "<" + code_of(got) + ">";
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(fs_atomic_writer_tests, temp_dir_fixture)

CAF_TEST(writes create parent directories) {
  // §13
  CAF_REQUIRE(write_file(path("a/b/c/file.txt"), "deep"));
  CAF_CHECK_EQUAL(content_of(path("a/b/c/file.txt")), "deep");
  auto st = stat_path(path("a/b/c"));
  CAF_REQUIRE(st);
  CAF_CHECK(st->kind == sandbox::fs::file_kind::dir);
}

CAF_TEST(a write replaces the old content and leaves no temporary file) {
  // §13
  put("f", "old content that is longer");
  CAF_REQUIRE(write_file(path("f"), "new"));
  CAF_CHECK_EQUAL(content_of(path("f")), "new");
  CAF_CHECK(names_in(dir) == std::vector<std::string>{"f"});
}

CAF_TEST(readers see the old file until the write commits) {
  // §13: never a torn file.
  put("f", "old");
  auto w = atomic_writer::open(path("f"));
  CAF_REQUIRE(w);
  CAF_REQUIRE(w->write("new, "));
  CAF_CHECK_EQUAL(content_of(path("f")), "old");
  CAF_REQUIRE(w->write("complete"));
  CAF_CHECK_EQUAL(content_of(path("f")), "old");
  CAF_REQUIRE(w->commit());
  CAF_CHECK_EQUAL(content_of(path("f")), "new, complete");
  CAF_CHECK_EQUAL(code_of(w->write("more")), "invalid_argument");
  CAF_CHECK_EQUAL(code_of(w->commit()), "invalid_argument");
}

CAF_TEST(an abandoned write leaves the old file and no temporary file) {
  // §13: a failed write leaves the old one.
  put("f", "old");
  {
    auto w = atomic_writer::open(path("f"));
    CAF_REQUIRE(w);
    CAF_REQUIRE(w->write("half"));
    // The temporary file is anonymous until the commit.
    CAF_CHECK(names_in(dir) == std::vector<std::string>{"f"});
  } // destructor aborts
  CAF_CHECK_EQUAL(content_of(path("f")), "old");
  CAF_CHECK(names_in(dir) == std::vector<std::string>{"f"});
  auto w = atomic_writer::open(path("f"));
  CAF_REQUIRE(w);
  w->abort();
  w->abort(); // idempotent
  CAF_CHECK(names_in(dir) == std::vector<std::string>{"f"});
}

CAF_TEST(a stale version is a conflict that keeps the old file) {
  // §13: compare-and-swap.
  put("f", "v1");
  auto v1 = stat_path(path("f"));
  CAF_REQUIRE(v1);
  CAF_REQUIRE(write_file(path("f"), "v2", v1->version));
  auto v2 = stat_path(path("f"));
  CAF_REQUIRE(v2);
  CAF_CHECK_NOT_EQUAL(v1->version, v2->version);
  // Writing again with the now stale v1 must fail and change nothing.
  auto stale = write_file(path("f"), "v3", v1->version);
  CAF_REQUIRE_EQUAL(code_of(stale), "conflict");
  auto msg = stale.error().message;
  CAF_CHECK_NOT_EQUAL(msg.find(path("f")), std::string::npos);
  CAF_CHECK_NOT_EQUAL(msg.find(v1->version), std::string::npos);
  CAF_CHECK_NOT_EQUAL(msg.find(v2->version), std::string::npos);
  CAF_CHECK_EQUAL(content_of(path("f")), "v2");
  auto now = stat_path(path("f"));
  CAF_REQUIRE(now);
  CAF_CHECK_EQUAL(now->version, v2->version);
  CAF_CHECK(names_in(dir) == std::vector<std::string>{"f"});
}

CAF_TEST(a change between open and commit is a conflict at commit) {
  // §13: the version is checked again right before the rename.
  put("f", "base");
  auto base = stat_path(path("f"));
  CAF_REQUIRE(base);
  auto w = atomic_writer::open(path("f"), base->version);
  CAF_REQUIRE(w);
  CAF_REQUIRE(w->write("mine"));
  CAF_REQUIRE(write_file(path("f"), "theirs"));
  CAF_CHECK_EQUAL(code_of(w->commit()), "conflict");
  CAF_CHECK_EQUAL(content_of(path("f")), "theirs");
  CAF_CHECK(names_in(dir) == std::vector<std::string>{"f"});
}

CAF_TEST(an empty version means the file must not exist) {
  // §13: create-only writes; documented choice.
  CAF_REQUIRE(write_file(path("new"), "first", std::string{}));
  CAF_CHECK_EQUAL(content_of(path("new")), "first");
  CAF_CHECK_EQUAL(code_of(write_file(path("new"), "second", std::string{})),
                  "conflict");
  CAF_CHECK_EQUAL(content_of(path("new")), "first");
  // Also when the file appears after the writer was opened.
  auto w = atomic_writer::open(path("late"), std::string{});
  CAF_REQUIRE(w);
  CAF_REQUIRE(w->write("mine"));
  put("late", "theirs");
  CAF_CHECK_EQUAL(code_of(w->commit()), "conflict");
  CAF_CHECK_EQUAL(content_of(path("late")), "theirs");
  CAF_CHECK_EQUAL(names_in(dir).size(), 2u); // new and late
}

CAF_TEST(a version for a missing file is a conflict) {
  // §13: a missing target counts as a mismatch.
  put("f", "x");
  auto v = stat_path(path("f"));
  CAF_REQUIRE(v);
  auto res = write_file(path("other"), "y", v->version);
  CAF_CHECK_EQUAL(code_of(res), "conflict");
  CAF_CHECK_EQUAL(::access(path("other").c_str(), F_OK), -1);
}

CAF_TEST(a write keeps the mode of an existing file) {
  // §13: overwriting is not re-creating.
  put("script", "#!/bin/sh\n");
  CAF_REQUIRE_EQUAL(::chmod(path("script").c_str(), 0750), 0);
  CAF_REQUIRE(write_file(path("script"), "#!/bin/sh\necho hi\n"));
  struct ::stat st;
  CAF_REQUIRE_EQUAL(::stat(path("script").c_str(), &st), 0);
  CAF_CHECK_EQUAL(st.st_mode & 07777, 0750u);
}

CAF_TEST(a symlink at the target is replaced by a regular file) {
  // §13, documented choice: the write acts on the path itself.
  put("target", "kept");
  CAF_REQUIRE_EQUAL(::symlink("target", path("link").c_str()), 0);
  auto link_version = stat_path(path("link"));
  CAF_REQUIRE(link_version);
  CAF_REQUIRE(write_file(path("link"), "replaced", link_version->version));
  auto st = stat_path(path("link"));
  CAF_REQUIRE(st);
  CAF_CHECK(st->kind == sandbox::fs::file_kind::file);
  CAF_CHECK_EQUAL(content_of(path("link")), "replaced");
  CAF_CHECK_EQUAL(content_of(path("target")), "kept");
}

CAF_TEST(targets that cannot hold a file are refused) {
  // §13
  mkdir("d");
  CAF_CHECK_EQUAL(code_of(write_file(path("d"), "x")), "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(write_file(dir + "/", "x")), "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(write_file(path("d/"), "x")), "not_a_regular_file");
  // A trailing slash names a directory: no file "new" is created (POSIX).
  CAF_CHECK_EQUAL(code_of(write_file(path("new/"), "x")), "invalid_argument");
  CAF_CHECK_EQUAL(::access(path("new").c_str(), F_OK), -1);
  CAF_CHECK_EQUAL(code_of(write_file("", "x")), "invalid_argument");
  put("file", "x");
  CAF_CHECK_EQUAL(code_of(write_file(path("file/"), "y")), "invalid_argument");
  CAF_CHECK_EQUAL(content_of(path("file")), "x");
  auto under_file = write_file(path("file/child"), "x");
  CAF_CHECK_EQUAL(code_of(under_file), "path_not_found");
  CAF_CHECK(names_in(path("d")).empty());
}

CAF_TEST(a name of the maximum length still gets a temporary file) {
  // §13: the temporary name is shortened to fit NAME_MAX.
  std::string name(255, 'n');
  CAF_REQUIRE(write_file(path(name), "long"));
  CAF_CHECK_EQUAL(content_of(path(name)), "long");
}

CAF_TEST(a writer killed during the write leaves no temporary file) {
  // A14: SIGKILL gives the writer no chance to clean up; the temporary
  // file must not have a name to leave behind.
  put("f", "old");
  int ready[2];
  CAF_REQUIRE_EQUAL(::pipe(ready), 0);
  auto pid = sandbox::test::quiet_fork();
  if (pid == 0) {
    ::close(ready[0]);
    auto w = atomic_writer::open(path("f"));
    if (!w || !w->write(std::string(4 << 20, 'n')))
      ::_exit(1);
    char c = 'w';
    if (::write(ready[1], &c, 1) != 1)
      ::_exit(1);
    for (;;)
      ::pause();
  }
  CAF_REQUIRE(pid > 0);
  ::close(ready[1]);
  char c = 0;
  CAF_REQUIRE_EQUAL(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::kill(pid, SIGKILL);
  int status = 0;
  CAF_REQUIRE_EQUAL(::waitpid(pid, &status, 0), pid);
  CAF_CHECK(WIFSIGNALED(status));
  CAF_CHECK(names_in(dir) == std::vector<std::string>{"f"});
  CAF_CHECK_EQUAL(content_of(path("f")), "old");
}

CAF_TEST(a commit name left by a killed writer is cleaned by the next commit) {
  // A14: the only moment a temporary file has a name is inside a commit,
  // under the directory lock; a writer killed right there leaves the
  // reserved name, which the next commit in the directory takes over.
  put(".sandbox-tmp-commit", "left over");
  CAF_REQUIRE(write_file(path("f"), "new"));
  CAF_CHECK_EQUAL(content_of(path("f")), "new");
  CAF_CHECK(names_in(dir) == std::vector<std::string>{"f"});
}

CAF_TEST(a file the caller may not write is not replaced) {
  // A13: as the shell's `>` does, a read-only file is permission_denied.
  // Root may write any file (as with open), so check as nobody.
  CAF_REQUIRE_EQUAL(::chmod(dir.c_str(), 0777), 0);
  put("root-only", "secret");
  CAF_REQUIRE_EQUAL(::chmod(path("root-only").c_str(), 0), 0);
  auto d = dir;
  auto verdict = sandbox::fs::testing::run_unprivileged([d] {
    auto own = d + "/own-read-only";
    if (!write_file(own, "mine") || ::chmod(own.c_str(), 0444) != 0)
      return false;
    auto mine = write_file(own, "changed");
    auto theirs = write_file(d + "/root-only", "changed");
    auto kept = read_file(own);
    return code_of(mine) == "permission_denied"
           && mine.error().message.find(own) != std::string::npos && kept
           && *kept == "mine"
           && (::getuid() == 0 || code_of(theirs) == "permission_denied");
  });
  if (!verdict) {
    CAF_MESSAGE("skipped: cannot drop privileges");
    return;
  }
  CAF_CHECK(*verdict);
  if (::geteuid() == 0)
    CAF_CHECK_EQUAL(content_of(path("root-only")), "secret");
  CAF_CHECK_EQUAL(names_in(dir).size(), 2u);
}

CAF_TEST(a write keeps the mode but drops the set - ID bits) {
  // A13: the kernel drops set-user-ID and set-group-ID when a file is
  // written; a replacing write must not keep them either.
  put("tool", "v1");
  CAF_REQUIRE_EQUAL(::chmod(path("tool").c_str(), 06751), 0);
  CAF_REQUIRE(write_file(path("tool"), "v2"));
  struct ::stat st;
  CAF_REQUIRE_EQUAL(::stat(path("tool").c_str(), &st), 0);
  CAF_CHECK_EQUAL(st.st_mode & 07777, 0751u);
  CAF_CHECK_EQUAL(content_of(path("tool")), "v2");
}

CAF_TEST(other hard links keep the old content) {
  // A13, documented: the write replaces the directory entry, not the inode.
  put("a", "old");
  CAF_REQUIRE_EQUAL(::link(path("a").c_str(), path("b").c_str()), 0);
  CAF_REQUIRE(write_file(path("a"), "new"));
  CAF_CHECK_EQUAL(content_of(path("a")), "new");
  CAF_CHECK_EQUAL(content_of(path("b")), "old");
}

CAF_TEST_FIXTURE_SCOPE_END()
