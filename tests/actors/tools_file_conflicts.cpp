#define CAF_SUITE actors.tools_file_conflicts
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// file_editor against another program that writes the file at the worst
// moment: while file_editor reads it, or between its read and its write.
// The other program is this test, run at the exact moment the session's
// filesystem worker opens the file (or its directory) by an open hook
// (tests/helpers/open_hook.hpp): an event, not a race.

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "editor_fixture.hpp"
#include "filesystem_fixture.hpp"
#include "helpers/open_hook.hpp"

using sandbox::test::editor_fixture;
using sandbox::test::insert;
using sandbox::test::open_hook;
using sandbox::test::replace;
using sandbox::test::undo;
using sandbox::test::view;

namespace {

/// Appends `line` through `fd` (opened before the hook: the hook's callback
/// must not open the file); false if it could not. Runs on the hook's
/// thread, so it reports instead of checking.
bool append(int fd, const std::string& line) {
  return ::write(fd, line.data(), line.size())
         == static_cast<ssize_t>(line.size());
}

/// The lines "theirs 1\n" to "theirs N\n".
std::string theirs(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i)
    out += "theirs " + std::to_string(i) + "\n";
  return out;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(tools_file_conflicts_tests, editor_fixture)

CAF_TEST(a file that changes during every read is refused for view and edit) {
  if (!open_hook::available(work))
    return;
  auto p = work + "/f.txt";
  put(p, "mine\n");
  auto fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  CAF_REQUIRE(fd >= 0);
  // Written on the hook's thread, before the open it holds goes on.
  std::atomic<int> n{0};
  std::atomic<bool> appended{true};
  {
    // Each open of the file (the worker's read) lets another program append
    // a line first: the version after the read never matches the one before.
    open_hook hook{{p}, [&](size_t) {
                     if (!append(fd, "theirs " + std::to_string(++n) + "\n"))
                       appended = false;
                   }};
    auto text = p + " kept changing while it was read; try again.";
    CAF_CHECK_EQUAL(failure(view(p), "conflict"), text);
    // Three reads, each changed under it, then the answer.
    CAF_CHECK_EQUAL(hook.opens(), 3u);
    CAF_CHECK_EQUAL(failure(replace(p, "mine", "edited"), "conflict"), text);
    CAF_CHECK_EQUAL(failure(insert(p, 0, "top"), "conflict"), text);
    CAF_CHECK_EQUAL(hook.opens(), 9u);
  }
  ::close(fd);
  // Nothing was written over the other program's lines, and no edit was
  // recorded.
  CAF_CHECK(appended.load());
  CAF_CHECK_EQUAL(n.load(), 9);
  CAF_CHECK_EQUAL(slurp(p), "mine\n" + theirs(9));
  CAF_CHECK_EQUAL(failure(undo(p), "nothing_to_undo"),
                  "No edit of " + p
                    + " to undo: undo_edit reverts the edits "
                      "file_editor made to this file in this session.");
  // Once the file stands still, the edit goes through.
  CAF_CHECK(!edit(replace(p, "mine", "edited")).is_error);
  CAF_CHECK_EQUAL(slurp(p), "edited\n" + theirs(9));
}

CAF_TEST(an edit of a file changed after its read writes nothing) {
  auto sub = work + "/sub";
  CAF_REQUIRE_EQUAL(s.execute("mkdir sub")->exit_code, 0);
  if (!open_hook::available(sub))
    return;
  auto p = sub + "/f.txt";
  put(p, "one\ntwo\n");
  auto fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  CAF_REQUIRE(fd >= 0);
  // Written on the hook's thread, before the open it holds goes on.
  std::atomic<int> changes{0};
  std::atomic<bool> appended{true};
  {
    // The edit reads the file (an open of f.txt), then writes it: the
    // atomic write opens the file's directory first. At that open, after
    // the read, another program appends a line.
    bool read = false; // the hook's thread only
    open_hook hook{
      {p, sub}, [&](size_t which) {
        if (which == 0) {
          read = true;
        } else if (read) {
          read = false;
          if (!append(fd, "theirs " + std::to_string(++changes) + "\n"))
            appended = false;
        }
      }};
    auto text = p
                + " changed since it was read (another program wrote it); "
                  "nothing was written: view it and edit again.";
    CAF_CHECK_EQUAL(failure(replace(p, "one", "ONE"), "conflict"), text);
    CAF_CHECK_EQUAL(changes.load(), 1);
    CAF_CHECK_EQUAL(failure(insert(p, 1, "one and a half"), "conflict"), text);
    CAF_CHECK_EQUAL(changes.load(), 2);
  }
  ::close(fd);
  // The other program's lines are all there, the edits' are not, and the
  // refused writes left no temporary file beside the file.
  CAF_CHECK(appended.load());
  CAF_CHECK_EQUAL(slurp(p), "one\ntwo\n" + theirs(2));
  CAF_CHECK_EQUAL(sandbox::test::temp_files_in(sub), 0u);
  CAF_CHECK_EQUAL(sandbox::test::open_temp_files_in(sub), 0u);
  CAF_CHECK_EQUAL(failure(undo(p), "nothing_to_undo"),
                  "No edit of " + p
                    + " to undo: undo_edit reverts the edits "
                      "file_editor made to this file in this session.");
  // Viewed again, the file is edited as the message suggests.
  CAF_CHECK_EQUAL(edit(view(p)).structured["total_lines"], 4);
  CAF_CHECK(!edit(replace(p, "one", "ONE")).is_error);
  CAF_CHECK_EQUAL(slurp(p), "ONE\ntwo\n" + theirs(2));
}

CAF_TEST_FIXTURE_SCOPE_END()
