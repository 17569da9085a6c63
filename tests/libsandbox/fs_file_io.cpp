#define CAF_SUITE libsandbox.fs_file_io
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <string>
#include <tuple>

#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/stat.hpp"
#include "sandbox/process/proc_stats.hpp"

#include "libsandbox/fs_fixture.hpp"

using sandbox::open_fd_count;
using sandbox::fs::file_reader;
using sandbox::fs::read_file;
using sandbox::fs::read_text;
using sandbox::fs::remove_file;
using sandbox::fs::testing::code_of;
using sandbox::fs::testing::run_unprivileged;
using sandbox::fs::testing::temp_dir_fixture;

namespace {

std::string all_bytes() {
  std::string result;
  for (int i = 0; i < 256; ++i)
    result += static_cast<char>(i);
  return result;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(fs_file_io_tests, temp_dir_fixture)

CAF_TEST(all 256 byte values survive a write and a read) {
  // §11, §13: bytes are bytes, not text.
  auto bytes = all_bytes() + all_bytes();
  CAF_REQUIRE(sandbox::fs::write_file(path("bin"), bytes));
  auto got = read_file(path("bin"));
  CAF_REQUIRE(got);
  CAF_CHECK(*got == bytes);
  CAF_CHECK_EQUAL(got->size(), 512u);
}

CAF_TEST(an empty file reads as an empty string) {
  // §11
  put("empty", "");
  auto got = read_file(path("empty"));
  CAF_REQUIRE(got);
  CAF_CHECK(got->empty());
}

CAF_TEST(a FIFO without a writer is refused at once) {
  // §11: never a hang. The alarm turns a regression into a crash of the
  // test binary instead of a stuck CI job.
  CAF_REQUIRE_EQUAL(::mkfifo(path("fifo").c_str(), 0600), 0);
  ::alarm(10);
  auto got = read_file(path("fifo"));
  auto reader = file_reader::open(path("fifo"));
  auto text = read_text(path("fifo"), 1, 0);
  ::alarm(0);
  CAF_CHECK_EQUAL(code_of(got), "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(reader), "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(text), "not_a_regular_file");
  if (!got)
    CAF_CHECK_NOT_EQUAL(got.error().message.find(path("fifo")),
                        std::string::npos);
}

CAF_TEST(directories and devices are not regular files) {
  // §11
  mkdir("d");
  CAF_CHECK_EQUAL(code_of(read_file(path("d"))), "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(read_file("/dev/null")), "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(file_reader::open("/dev/zero")),
                  "not_a_regular_file");
}

CAF_TEST(a missing file is path_not_found naming the path) {
  // §11
  auto got = read_file(path("missing"));
  CAF_REQUIRE_EQUAL(code_of(got), "path_not_found");
  CAF_CHECK_NOT_EQUAL(got.error().message.find(path("missing")),
                      std::string::npos);
  // A parent that is a file is the same thing for the caller.
  put("file", "x");
  CAF_CHECK_EQUAL(code_of(read_file(path("file/child"))), "path_not_found");
  CAF_CHECK_EQUAL(code_of(read_file("")), "invalid_argument");
}

CAF_TEST(a symlink to a file is read through) {
  // §11
  put("target", "via link");
  CAF_REQUIRE_EQUAL(::symlink("target", path("link").c_str()), 0);
  auto got = read_file(path("link"));
  CAF_REQUIRE(got);
  CAF_CHECK_EQUAL(*got, "via link");
}

CAF_TEST(an unreadable file is permission_denied) {
  // §11. Root ignores mode bits, so the check runs as nobody in a child.
  put("secret", "x");
  CAF_REQUIRE_EQUAL(::chmod(dir.c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::chmod(path("secret").c_str(), 0), 0);
  auto secret = path("secret");
  auto verdict = run_unprivileged([&secret] {
    return code_of(read_file(secret)) == "permission_denied"
           && code_of(file_reader::open(secret)) == "permission_denied";
  });
  if (!verdict)
    CAF_MESSAGE("skipped: cannot drop privileges to nobody");
  else
    CAF_CHECK(*verdict);
}

CAF_TEST(read_text selects 1 - based inclusive line ranges) {
  // §11
  put("t", "one\ntwo\nthree");
  auto lines = [this](uint64_t from, uint64_t to, const char* file = "t") {
    auto got = read_text(path(file), from, to);
    return got ? *got : "<" + code_of(got) + ">";
  };
  CAF_CHECK_EQUAL(lines(1, 1), "one\n");
  CAF_CHECK_EQUAL(lines(2, 2), "two\n");
  CAF_CHECK_EQUAL(lines(2, 3), "two\nthree");
  CAF_CHECK_EQUAL(lines(3, 0), "three");
  CAF_CHECK_EQUAL(lines(1, 0), "one\ntwo\nthree");
  CAF_CHECK_EQUAL(lines(2, 99), "two\nthree");
  CAF_CHECK_EQUAL(lines(4, 0), "");
  CAF_CHECK_EQUAL(lines(0, 1), "<invalid_argument>");
  CAF_CHECK_EQUAL(lines(3, 2), "<invalid_argument>");
  put("nl", "a\n\nb\n");
  CAF_CHECK_EQUAL(lines(2, 2, "nl"), "\n");
  CAF_CHECK_EQUAL(lines(3, 0, "nl"), "b\n");
  CAF_CHECK_EQUAL(lines(4, 0, "nl"), "");
}

CAF_TEST(read_text finds lines across chunk boundaries) {
  // §11: the file is streamed in 64 KiB chunks; lines must not care.
  std::string text;
  for (int i = 1; i <= 50'000; ++i)
    text += "line " + std::to_string(i) + "\n";
  put("big", text);
  auto got = read_text(path("big"), 30'000, 30'002);
  CAF_REQUIRE(got);
  CAF_CHECK_EQUAL(*got, "line 30000\nline 30001\nline 30002\n");
  auto tail = read_text(path("big"), 50'000, 0);
  CAF_REQUIRE(tail);
  CAF_CHECK_EQUAL(*tail, "line 50000\n");
}

CAF_TEST(a line range selects the same bytes however the stream is cut) {
  // What the CLI's streamed `read --start-line/--end-line` relies on.
  using sandbox::fs::line_range;
  const std::string text = "one\n\ntwo\nthree\nfour";
  auto whole = [&](uint64_t from, uint64_t to) {
    line_range r{from, to};
    return std::string{r.select(text)};
  };
  CAF_CHECK_EQUAL(whole(1, 1), "one\n");
  CAF_CHECK_EQUAL(whole(2, 2), "\n");
  CAF_CHECK_EQUAL(whole(3, 4), "two\nthree\n");
  CAF_CHECK_EQUAL(whole(4, 0), "three\nfour");
  CAF_CHECK_EQUAL(whole(0, 0), text);
  CAF_CHECK_EQUAL(whole(6, 9), "");
  // (from, to, offset just after the end line; 0: never complete)
  using range_case = std::tuple<uint64_t, uint64_t, size_t>;
  for (size_t size : {1u, 2u, 3u, 7u}) {
    for (auto [from, to, end_at] :
         {range_case{1, 1, 4}, range_case{2, 3, 9}, range_case{3, 0, 0},
          range_case{5, 5, 0}, range_case{6, 0, 0}}) {
      line_range r{from, to};
      std::string got;
      size_t fed = 0;
      for (; fed < text.size() && !r.done(); fed += size)
        got += r.select(std::string_view{text}.substr(fed, size));
      CAF_CHECK_EQUAL(got, whole(from, to));
      CAF_CHECK_EQUAL(r.done(), end_at != 0);
      if (end_at != 0) {
        // Done with the chunk that completes the end line, not later.
        CAF_CHECK_LESS(fed - size, end_at);
        CAF_CHECK(r.select("more\n").empty());
      }
    }
  }
}

CAF_TEST(a file reader streams chunks and can be replayed) {
  // §12: each open starts a fresh stream.
  auto bytes = all_bytes();
  put("s", bytes);
  for (int round = 0; round < 2; ++round) {
    auto reader = file_reader::open(path("s"));
    CAF_REQUIRE(reader);
    std::string collected;
    for (;;) {
      auto chunk = reader->next(7);
      CAF_REQUIRE(chunk);
      if (chunk->empty())
        break;
      CAF_CHECK_LESS_OR_EQUAL(chunk->size(), 7u);
      collected += *chunk;
    }
    CAF_CHECK(collected == bytes);
    // EOF is sticky.
    auto again = reader->next(7);
    CAF_REQUIRE(again);
    CAF_CHECK(again->empty());
    CAF_CHECK_EQUAL(code_of(reader->next(0)), "invalid_argument");
  }
  CAF_CHECK_EQUAL(code_of(file_reader::open(path("nope"))), "path_not_found");
}

CAF_TEST(remove_file removes files and symlinks) {
  // §14
  put("f", "x");
  put("target", "y");
  CAF_REQUIRE_EQUAL(::symlink("target", path("link").c_str()), 0);
  CAF_CHECK(remove_file(path("f")));
  CAF_CHECK(remove_file(path("link")));
  CAF_CHECK_EQUAL(::access(path("f").c_str(), F_OK), -1);
  CAF_CHECK_EQUAL(::access(path("link").c_str(), F_OK), -1);
  // The link went, not what it pointed at.
  CAF_CHECK_EQUAL(::access(path("target").c_str(), F_OK), 0);
}

CAF_TEST(remove_file of a missing path is path_not_found) {
  // §14
  auto removed = remove_file(path("missing"));
  CAF_REQUIRE_EQUAL(code_of(removed), "path_not_found");
  CAF_CHECK_NOT_EQUAL(removed.error().message.find(path("missing")),
                      std::string::npos);
}

CAF_TEST(remove_file refuses directories) {
  // §14: directories are not files; documented as not_a_regular_file.
  mkdir("d");
  CAF_CHECK_EQUAL(code_of(remove_file(path("d"))), "not_a_regular_file");
  CAF_CHECK_EQUAL(::access(path("d").c_str(), F_OK), 0);
}

CAF_TEST(a trailing slash names a directory) {
  // A15: POSIX path resolution. "f/" of a regular file is "Not a
  // directory" and removes nothing; "link/" of a symlink to a directory is
  // that directory, so the symlink is not removed either.
  put("f", "kept");
  mkdir("d");
  CAF_REQUIRE_EQUAL(::symlink("d", path("dirlink").c_str()), 0);
  CAF_REQUIRE_EQUAL(::symlink("f", path("filelink").c_str()), 0);
  auto rm_file = remove_file(path("f/"));
  CAF_CHECK_EQUAL(code_of(rm_file), "path_not_found");
  CAF_CHECK_NOT_EQUAL(rm_file.error().message.find("Not a directory"),
                      std::string::npos);
  CAF_CHECK_EQUAL(code_of(remove_file(path("f/."))), "path_not_found");
  CAF_CHECK_EQUAL(code_of(remove_file(path("dirlink/"))), "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(remove_file(path("filelink/"))), "path_not_found");
  CAF_CHECK_EQUAL(code_of(remove_file(path("d/"))), "not_a_regular_file");
  CAF_CHECK_EQUAL(code_of(remove_file(path("missing/"))), "path_not_found");
  struct ::stat st;
  CAF_CHECK_EQUAL(::lstat(path("f").c_str(), &st), 0);
  CAF_CHECK_EQUAL(::lstat(path("dirlink").c_str(), &st), 0);
  CAF_CHECK_EQUAL(::lstat(path("filelink").c_str(), &st), 0);
  CAF_CHECK_EQUAL(code_of(read_file(path("f/"))), "path_not_found");
  CAF_CHECK_EQUAL(code_of(read_text(path("f/"), 1, 0)), "path_not_found");
  CAF_CHECK_EQUAL(code_of(file_reader::open(path("f/"))), "path_not_found");
  CAF_CHECK_EQUAL(code_of(read_file(path("dirlink/"))), "not_a_regular_file");
  auto kept = read_file(path("f"));
  CAF_REQUIRE(kept);
  CAF_CHECK_EQUAL(*kept, "kept");
}

CAF_TEST(no descriptor is left open on any path) {
  // Fault paths leave no file descriptors behind.
  put("f", "content\n");
  mkdir("d");
  CAF_REQUIRE_EQUAL(::mkfifo(path("fifo").c_str(), 0600), 0);
  auto st = sandbox::fs::stat_path(path("f"));
  SANDBOX_REQUIRE_OK(st);
  auto version = st->version;
  auto before = open_fd_count();
  for (auto p : {"f", "d", "fifo", "missing", "f/x"}) {
    read_file(path(p));
    read_text(path(p), 1, 1);
    file_reader::open(path(p));
    sandbox::fs::write_file(path(p), "x", std::string{"stale"});
  }
  {
    auto w = sandbox::fs::atomic_writer::open(path("f"), version);
    CAF_REQUIRE(w);
    CAF_REQUIRE(w->write("y"));
    put("f", "changed");
    CAF_CHECK_EQUAL(code_of(w->commit()), "conflict");
  }
  {
    auto w = sandbox::fs::atomic_writer::open(path("g"));
    CAF_REQUIRE(w);
    auto moved = std::move(*w);
    CAF_CHECK_EQUAL(code_of(w->write("z")), "invalid_argument");
    CAF_REQUIRE(moved.write("z"));
    CAF_REQUIRE(moved.commit());
  }
  {
    auto r = file_reader::open(path("f"));
    CAF_REQUIRE(r);
    auto moved = std::move(*r);
    CAF_CHECK_EQUAL(code_of(r->next(1)), "invalid_argument");
    CAF_CHECK(moved.next(1));
  }
  remove_file(path("missing"));
  remove_file(path("d"));
  remove_file(path("d/"));
  remove_file(path("f/"));
  CAF_CHECK_EQUAL(open_fd_count(), before);
}

CAF_TEST_FIXTURE_SCOPE_END()
