#define CAF_SUITE actors.tools_file_editor
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <fmt/format.h>

#include "editor_fixture.hpp"

using nlohmann::json;
using sandbox::actors::toolbox;
using sandbox::actors::toolbox_options;
using sandbox::test::create;
using sandbox::test::editor_fixture;
using sandbox::test::insert;
using sandbox::test::replace;
using sandbox::test::review;
using sandbox::test::undo;
using sandbox::test::view;

CAF_TEST_FIXTURE_SCOPE(tools_file_editor_tests, editor_fixture)

// -- paths and parameters -----------------------------------------------------

CAF_TEST(a relative path is refused with the absolute one suggested) {
  CAF_CHECK_EQUAL(failure(view("src/a.txt"), "invalid_path"),
                  "The path \"src/a.txt\" is not an absolute path: "
                  "file_editor takes absolute paths only. Maybe you meant "
                    + work + "/src/a.txt?");
  CAF_CHECK_EQUAL(failure(view(""), "invalid_path"),
                  "The path \"\" is not an absolute path: file_editor takes "
                  "absolute paths only.");
}

CAF_TEST(a path with a dot dot segment is refused) {
  CAF_CHECK_EQUAL(failure(create(work + "/a/../b", "x"), "invalid_path"),
                  "The path " + work
                    + "/a/../b has a `..` segment: give the "
                      "absolute path without `..`.");
  CAF_CHECK(!exists(work + "/b"));
  CAF_CHECK_EQUAL(failure(view("/.."), "invalid_path"),
                  "The path /.. has a `..` segment: give the absolute path "
                  "without `..`.");
  // A name that merely contains two dots is fine.
  CAF_CHECK(!edit(create(work + "/a..b", "x")).is_error);
}

CAF_TEST(each command takes its own parameters only) {
  auto p = work + "/f.txt";
  put(p, "x\n");
  CAF_CHECK_EQUAL(failure({{"command", "create"}, {"path", p}},
                          "missing_parameter"),
                  "Parameter `file_text` is required for command `create`.");
  CAF_CHECK_EQUAL(failure({{"command", "str_replace"}, {"path", p}},
                          "missing_parameter"),
                  "Parameter `old_str` is required for command "
                  "`str_replace`.");
  CAF_CHECK_EQUAL(
    failure({{"command", "insert"}, {"path", p}, {"new_str", "y"}},
            "missing_parameter"),
    "Parameter `insert_line` is required for command "
    "`insert`.");
  CAF_CHECK_EQUAL(
    failure({{"command", "insert"}, {"path", p}, {"insert_line", 0}},
            "missing_parameter"),
    "Parameter `new_str` is required for command `insert`.");
  CAF_CHECK_EQUAL(failure({{"command", "view"}, {"path", p}, {"old_str", "x"}},
                          "invalid_parameter"),
                  "Parameter `old_str` is not used by command `view` (it "
                  "takes path, view_range (optional)).");
  CAF_CHECK_EQUAL(
    failure({{"command", "undo_edit"}, {"path", p}, {"file_text", "x"}},
            "invalid_parameter"),
    "Parameter `file_text` is not used by command `undo_edit` "
    "(it takes path).");
  CAF_CHECK_EQUAL(failure({{"command", "create"},
                           {"path", work + "/new.txt"},
                           {"file_text", "x"},
                           {"view_range", {1, 2}}},
                          "invalid_parameter"),
                  "Parameter `view_range` is not used by command `create` (it "
                  "takes path, file_text).");
  CAF_CHECK_EQUAL(failure({{"command", "str_replace"},
                           {"path", p},
                           {"old_str", "x"},
                           {"insert_line", 0}},
                          "invalid_parameter"),
                  "Parameter `insert_line` is not used by command "
                  "`str_replace` (it takes path, old_str, new_str "
                  "(optional)).");
  CAF_CHECK_EQUAL(failure({{"command", "insert"},
                           {"path", p},
                           {"insert_line", 0},
                           {"new_str", "y"},
                           {"old_str", "x"}},
                          "invalid_parameter"),
                  "Parameter `old_str` is not used by command `insert` (it "
                  "takes path, insert_line, new_str).");
  // A parameter of another command is named before a missing one.
  CAF_CHECK_EQUAL(
    failure({{"command", "create"}, {"path", p}, {"new_str", "x"}},
            "invalid_parameter"),
    "Parameter `new_str` is not used by command `create` (it "
    "takes path, file_text).");
  CAF_CHECK_EQUAL(slurp(p), "x\n");
  CAF_CHECK(!exists(work + "/new.txt"));
}

CAF_TEST(the schema is checked before the parameters of each command) {
  // A wrong type and a missing parameter: the schema refuses the call (an
  // error, not a tool result) before the command's own checks run.
  auto r = tb.call("file_editor", {{"command", "insert"},
                                   {"path", work + "/f.txt"},
                                   {"insert_line", -1}});
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == sandbox::errc::invalid_argument);
  CAF_CHECK_EQUAL(r.error().message,
                  "file_editor: \"insert_line\" must be >= 0, got -1");
}

// -- view ---------------------------------------------------------------------

CAF_TEST(view of a file shows numbered lines) {
  auto p = work + "/f.txt";
  put(p, "one\ntwo\nthree\n");
  auto r = edit(view(p));
  CAF_CHECK(!r.is_error);
  CAF_CHECK_EQUAL(r.text, "Here's the result of running `cat -n` on " + p
                            + ":\n     1\tone\n     2\ttwo\n     3\tthree\n");
  CAF_CHECK_EQUAL(r.structured, json({{"command", "view"},
                                      {"path", p},
                                      {"kind", "file"},
                                      {"total_lines", 3},
                                      {"start_line", 1},
                                      {"end_line", 3},
                                      {"truncated", false},
                                      {"content", "one\ntwo\nthree\n"}}));
}

CAF_TEST(view_range is 1-based and inclusive with -1 for the end) {
  auto p = work + "/f.txt";
  put(p, "one\ntwo\nthree");
  auto r = edit(view(p, 2, -1));
  CAF_CHECK_EQUAL(r.text, "Here's the result of running `cat -n` on " + p
                            + ":\n     2\ttwo\n     3\tthree\n");
  CAF_CHECK_EQUAL(r.structured["content"], "two\nthree");
  auto one = edit(view(p, 2, 2));
  CAF_CHECK_EQUAL(one.text, "Here's the result of running `cat -n` on " + p
                              + ":\n     2\ttwo\n");
  CAF_CHECK_EQUAL(one.structured["content"], "two\n");
  CAF_CHECK_EQUAL(edit(view(p, 3, 3)).structured["end_line"], 3);
}

CAF_TEST(a view_range out of range is a clear error) {
  auto p = work + "/f.txt";
  put(p, "one\ntwo\nthree\n");
  CAF_CHECK_EQUAL(failure(view(p, 2, 9), "out_of_range"),
                  "Invalid view_range [2, 9]: the last line 9 is past the "
                  "end; "
                    + p
                    + " has 3 lines (use -1 for the end of the "
                      "file).");
  CAF_CHECK_EQUAL(failure(view(p, 4, -1), "out_of_range"),
                  "Invalid view_range [4, -1]: the first line 4 is out of "
                  "range; "
                    + p + " has 3 lines.");
  CAF_CHECK_EQUAL(failure(view(p, 0, 2), "out_of_range"),
                  "Invalid view_range [0, 2]: the first line 0 is out of "
                  "range; "
                    + p + " has 3 lines.");
  CAF_CHECK_EQUAL(failure(view(p, 3, 2), "out_of_range"),
                  "Invalid view_range [3, 2]: the last line 2 is before the "
                  "first line 3 (use -1 for the end of the file).");
  put(p, "");
  CAF_CHECK_EQUAL(failure(view(p, 1, -1), "out_of_range"),
                  "Invalid view_range [1, -1]: the first line 1 is out of "
                  "range; "
                    + p + " is empty (0 lines).");
}

CAF_TEST(view of an empty file says so) {
  auto p = work + "/empty";
  put(p, "");
  auto r = edit(view(p));
  CAF_CHECK(!r.is_error);
  CAF_CHECK_EQUAL(r.text, p + " is empty.\n");
  CAF_CHECK_EQUAL(r.structured["total_lines"], 0);
}

CAF_TEST(view of a missing path is an error naming it) {
  auto p = work + "/nope.txt";
  auto text = failure(view(p), "path_not_found");
  CAF_CHECK_EQUAL(text.rfind("The path " + p + " does not exist (", 0), 0u);
}

CAF_TEST(view of a directory lists two levels without hidden entries) {
  auto made = s.execute("mkdir -p src/deep/deeper .git/objects "
                        "src/.cache && touch README src/main.c "
                        "src/deep/x src/deep/deeper/y .env "
                        ".git/HEAD src/.hidden src/.cache/z && "
                        "ln -s src link");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  auto r = edit(view(work));
  CAF_CHECK(!r.is_error);
  CAF_CHECK_EQUAL(r.text, "Here are the files and directories up to 2 levels "
                          "below "
                            + work + ", hidden entries excluded:\n" + work
                            + "/\n" + work + "/README\n" + work
                            + "/link (symlink)\n" + work + "/src/\n" + work
                            + "/src/deep/\n" + work + "/src/main.c\n");
  CAF_CHECK_EQUAL(r.structured["kind"], "directory");
  CAF_CHECK_EQUAL(r.structured["total_entries"], 5);
  CAF_CHECK_EQUAL(
    r.structured["entries"][0],
    json({{"path", work + "/README"}, {"kind", "file"}, {"size", 0}}));
  // A symlink to a directory is viewed as that directory.
  auto l = edit(view(work + "/link"));
  CAF_CHECK_EQUAL(l.structured["kind"], "directory");
  CAF_CHECK_EQUAL(l.structured["total_entries"], 4);
}

CAF_TEST(view_range is refused for a directory) {
  CAF_CHECK_EQUAL(failure(view(work, 1, 2), "invalid_parameter"),
                  "Parameter `view_range` is not allowed when path is a "
                  "directory: "
                    + work + " is a directory.");
}

CAF_TEST(a long view is cut at a line end and says how to see the rest) {
  toolbox_options opts;
  opts.max_view_bytes = 30;
  toolbox small{s, opts};
  auto p = work + "/long.txt";
  put(p, "a\nb\nc\nd\ne\n");
  auto r = small.call("file_editor", view(p));
  SANDBOX_REQUIRE_OK(r);
  // Each numbered line is 9 bytes: three fit in 30.
  CAF_CHECK_EQUAL(r->text, "Here's the result of running `cat -n` on " + p
                             + ":\n     1\ta\n     2\tb\n     3\tc\n[view cut "
                               "after line 3 of 5 (over 30 bytes): use "
                               "view_range [4, 5] to see the rest]\n");
  CAF_CHECK_EQUAL(r->structured["truncated"], true);
  CAF_CHECK_EQUAL(r->structured["end_line"], 3);
}

CAF_TEST(a long directory view is cut and says how many entries are left) {
  toolbox_options opts;
  opts.max_dir_entries = 2;
  toolbox small{s, opts};
  auto made = s.execute("touch a b c d");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  auto r = small.call("file_editor", view(work));
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->text, "Here are the files and directories up to 2 "
                           "levels below "
                             + work
                             + ", hidden entries "
                               "excluded:\n"
                             + work + "/\n" + work + "/a\n" + work
                             + "/b\n[2 more entries not shown: view a "
                               "subdirectory or use the shell tool]\n");
  CAF_CHECK_EQUAL(r->structured["truncated"], true);
  CAF_CHECK_EQUAL(r->structured["total_entries"], 4);
}

// -- binary and large files ---------------------------------------------------

CAF_TEST(binary files are refused for viewing and editing) {
  auto p = work + "/blob";
  put(p, std::string{"ab\0cd\n", 6});
  auto nul = p
             + " is a binary file (NUL byte at offset 2): file_editor views "
               "and edits text files only; use the shell tool for it.";
  CAF_CHECK_EQUAL(failure(view(p), "binary_file"), nul);
  CAF_CHECK_EQUAL(failure(replace(p, "ab", "x"), "binary_file"), nul);
  CAF_CHECK_EQUAL(failure(insert(p, 0, "x"), "binary_file"), nul);
  auto q = work + "/latin1";
  put(q, "caf\xE9\n");
  CAF_CHECK_EQUAL(failure(replace(q, "caf", "x"), "binary_file"),
                  q
                    + " is a binary file (invalid UTF-8 at offset 3): "
                      "file_editor views and edits text files only; use the "
                      "shell tool for it.");
  CAF_CHECK_EQUAL(slurp(p), std::string("ab\0cd\n", 6));
  CAF_CHECK_EQUAL(slurp(q), "caf\xE9\n");
  CAF_CHECK_EQUAL(failure(create(work + "/new", std::string{"x\0", 2}),
                          "binary_file"),
                  "file_text holds a NUL byte at offset 1: file_editor "
                  "writes text files only.");
  CAF_CHECK(!exists(work + "/new"));
  put(work + "/t", "t\n");
  CAF_CHECK_EQUAL(failure(replace(work + "/t", "t", std::string{"\0", 1}),
                          "binary_file"),
                  "new_str holds a NUL byte at offset 0: file_editor writes "
                  "text files only.");
}

CAF_TEST(files over the size limit are refused) {
  toolbox_options opts;
  opts.max_file_bytes = 10;
  toolbox small{s, opts};
  auto p = work + "/big";
  put(p, "0123456789AB\n");
  auto r = small.call("file_editor", view(p));
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->is_error);
  CAF_CHECK_EQUAL(r->text, p
                             + " is 13 bytes, over file_editor's limit of 10 "
                               "bytes: use the shell tool to work on it "
                               "(head, sed -n, ...).");
}

CAF_TEST(a FIFO is refused without being opened) {
  CAF_REQUIRE_EQUAL(s.execute("mkfifo fifo")->exit_code, 0);
  auto p = work + "/fifo";
  // Opening the FIFO for reading would block until a writer comes (and a
  // read would wait for data): this writer comes at once if the tool opens
  // it, so that such a bug fails the checks below instead of hanging. The
  // test opens the FIFO itself at the end to let the writer go.
  std::atomic<bool> released{false};
  std::atomic<bool> opened_by_tool{false};
  std::thread writer{[&] {
    auto fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
    if (!released)
      opened_by_tool = true;
    if (fd >= 0)
      ::close(fd);
  }};
  auto text = p + " is not a regular file.";
  CAF_CHECK_EQUAL(failure(view(p), "not_a_regular_file"), text);
  CAF_CHECK_EQUAL(failure(view(p, 1, -1), "not_a_regular_file"), text);
  CAF_CHECK_EQUAL(failure(replace(p, "a", "b"), "not_a_regular_file"), text);
  CAF_CHECK_EQUAL(failure(insert(p, 0, "x"), "not_a_regular_file"), text);
  CAF_CHECK_EQUAL(failure(create(p, "x"), "file_exists"),
                  "A directory or other non-regular file already exists at " + p
                    + ": create makes new files only.");
  released = true;
  auto reader = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  CAF_CHECK(reader >= 0);
  writer.join();
  if (reader >= 0)
    ::close(reader);
  CAF_CHECK(!opened_by_tool);
  struct ::stat st;
  CAF_REQUIRE_EQUAL(::lstat(p.c_str(), &st), 0);
  CAF_CHECK(S_ISFIFO(st.st_mode));
}

CAF_TEST(a symlink is viewed but not edited) {
  auto p = work + "/target.txt";
  put(p, "x\n");
  auto made = s.execute("ln -s target.txt link.txt");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  CAF_CHECK_EQUAL(edit(view(work + "/link.txt")).structured["content"], "x\n");
  CAF_CHECK_EQUAL(failure(replace(work + "/link.txt", "x", "y"),
                          "not_a_regular_file"),
                  work
                    + "/link.txt is a symbolic link: file_editor edits "
                      "regular files; give the path of its target.");
  CAF_CHECK_EQUAL(slurp(p), "x\n");
}

// -- create -------------------------------------------------------------------

CAF_TEST(create makes parents and answers a numbered snippet) {
  auto p = work + "/a/b/new.py";
  auto r = edit(create(p, "print(1)\nprint(2)\n"));
  CAF_CHECK(!r.is_error);
  CAF_CHECK_EQUAL(r.text, "File created successfully at " + p
                            + " (2 lines, 18 bytes). Here's the result of "
                              "running `cat -n` on a snippet of "
                            + p + ":\n     1\tprint(1)\n     2\tprint(2)\n");
  CAF_CHECK_EQUAL(
    r.structured,
    json({{"command", "create"}, {"path", p}, {"lines", 2}, {"bytes", 18}}));
  CAF_CHECK_EQUAL(slurp(p), "print(1)\nprint(2)\n");
}

CAF_TEST(a snippet of a long change shows the ends of the changed lines) {
  auto p = work + "/long.txt";
  std::string text;
  for (int i = 1; i <= 100; ++i)
    text += std::to_string(i) + "\n";
  auto r = edit(create(p, text));
  std::string head;
  for (int i = 1; i <= 16; ++i)
    head += fmt::format("{:>6}\t{}\n", i, i);
  std::string tail;
  for (int i = 85; i <= 100; ++i)
    tail += fmt::format("{:>6}\t{}\n", i, i);
  CAF_CHECK_EQUAL(r.text, "File created successfully at " + p
                            + " (100 lines, 292 bytes). Here's the result of "
                              "running `cat -n` on a snippet of "
                            + p + ":\n" + head
                            + "   ...\t[68 changed lines not shown]\n" + tail);
}

CAF_TEST(create refuses to overwrite an existing file or directory) {
  auto p = work + "/f.txt";
  put(p, "keep\n");
  CAF_CHECK_EQUAL(failure(create(p, "new\n"), "file_exists"),
                  "File already exists at " + p
                    + ": create never "
                      "overwrites; use str_replace or insert to change it.");
  CAF_CHECK_EQUAL(slurp(p), "keep\n");
  CAF_CHECK_EQUAL(failure(create(work, "new\n"), "file_exists"),
                  "A directory or other non-regular file already exists at "
                    + work + ": create makes new files only.");
}

// -- str_replace --------------------------------------------------------------

CAF_TEST(str_replace replaces the one occurrence and shows a snippet) {
  auto p = work + "/f.txt";
  put(p, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n");
  auto r = edit(replace(p, "6\n7\n", "six\n"));
  CAF_CHECK(!r.is_error);
  CAF_CHECK_EQUAL(slurp(p), "1\n2\n3\n4\n5\nsix\n8\n9\n10\n11\n12\n");
  CAF_CHECK_EQUAL(r.text, "The file " + p
                            + " has been edited. Here's the "
                              "result of running `cat -n` on a snippet of "
                            + p
                            + ":\n     2\t2\n     3\t3\n     4\t4\n     5\t5\n"
                              "     6\tsix\n     7\t8\n     8\t9\n     9\t10\n"
                              "    10\t11\n"
                            + review);
  CAF_CHECK_EQUAL(r.structured, json({{"command", "str_replace"},
                                      {"path", p},
                                      {"first_line", 6},
                                      {"last_line", 6}}));
}

CAF_TEST(str_replace without new_str deletes old_str) {
  auto p = work + "/f.txt";
  put(p, "keep drop keep\n");
  CAF_CHECK(
    !edit({{"command", "str_replace"}, {"path", p}, {"old_str", " drop"}})
       .is_error);
  CAF_CHECK_EQUAL(slurp(p), "keep keep\n");
}

CAF_TEST(str_replace without a match changes nothing and says so) {
  auto p = work + "/f.txt";
  put(p, "alpha\n");
  CAF_CHECK_EQUAL(failure(replace(p, "beta", "x"), "no_match"),
                  "No replacement was performed: old_str does not occur "
                  "verbatim in "
                    + p
                    + " (match whitespace and indentation "
                      "exactly).");
  CAF_CHECK_EQUAL(slurp(p), "alpha\n");
}

CAF_TEST(str_replace with several matches says how many and on which lines) {
  auto p = work + "/f.txt";
  put(p, "x = 1\ny = 2\nx = 3\n");
  CAF_CHECK_EQUAL(failure(replace(p, "x =", "z ="), "multiple_matches"),
                  "No replacement was performed: old_str occurs 2 times in " + p
                    + ", on lines 1, 3. Include more surrounding lines "
                      "in old_str to make it unique.");
  put(p, "aaa\n");
  // Overlapping occurrences count, and one line is named once.
  CAF_CHECK_EQUAL(failure(replace(p, "aa", "b"), "multiple_matches"),
                  "No replacement was performed: old_str occurs 2 times in " + p
                    + ", on line 1. Include more surrounding lines in "
                      "old_str to make it unique.");
  CAF_CHECK_EQUAL(slurp(p), "aaa\n");
}

CAF_TEST(str_replace refuses an empty old_str) {
  auto p = work + "/f.txt";
  put(p, "a\n");
  CAF_CHECK_EQUAL(failure(replace(p, "", "x"), "invalid_parameter"),
                  "Parameter `old_str` must not be empty: give the exact "
                  "text to replace.");
}

CAF_TEST(an edit of a missing file is an error naming it) {
  auto p = work + "/missing.txt";
  auto text = failure(replace(p, "a", "b"), "path_not_found");
  CAF_CHECK_EQUAL(text.rfind("The path " + p + " does not exist (", 0), 0u);
  CAF_CHECK(!exists(p));
}

// -- insert -------------------------------------------------------------------

CAF_TEST(insert goes after a 0 - based line) {
  auto p = work + "/f.txt";
  put(p, "a\nb\n");
  auto top = edit(insert(p, 0, "first"));
  CAF_CHECK_EQUAL(slurp(p), "first\na\nb\n");
  CAF_CHECK_EQUAL(top.text, "The file " + p
                              + " has been edited: 1 line "
                                "inserted after line 0. Here's the result of "
                                "running `cat -n` on a snippet of "
                              + p + ":\n     1\tfirst\n     2\ta\n     3\tb\n"
                              + review);
  CAF_CHECK_EQUAL(top.structured, json({{"command", "insert"},
                                        {"path", p},
                                        {"first_line", 1},
                                        {"last_line", 1}}));
  auto mid = edit(insert(p, 2, "x\ny\n"));
  CAF_CHECK_EQUAL(slurp(p), "first\na\nx\ny\nb\n");
  CAF_CHECK_EQUAL(mid.structured["first_line"], 3);
  CAF_CHECK_EQUAL(mid.structured["last_line"], 4);
  edit(insert(p, 5, "end"));
  // At the end of a file that ends with a newline, the new line gets one.
  CAF_CHECK_EQUAL(slurp(p), "first\na\nx\ny\nb\nend\n");
}

CAF_TEST(insert after a last line without a newline starts a new line) {
  auto p = work + "/f.txt";
  put(p, "a");
  edit(insert(p, 1, "b"));
  CAF_CHECK_EQUAL(slurp(p), "a\nb");
  auto q = work + "/empty";
  put(q, "");
  edit(insert(q, 0, "only"));
  CAF_CHECK_EQUAL(slurp(q), "only");
}

CAF_TEST(insert past the end is a clear error) {
  auto p = work + "/f.txt";
  put(p, "a\nb\n");
  CAF_CHECK_EQUAL(failure(insert(p, 3, "x"), "out_of_range"),
                  "Invalid insert_line 3: " + p
                    + " has 2 lines; give 0 to "
                      "insert at the top, up to 2 to insert after the last "
                      "line.");
  CAF_CHECK_EQUAL(slurp(p), "a\nb\n");
}

// -- undo_edit ----------------------------------------------------------------

CAF_TEST(undo_edit steps back through the edits of a file) {
  auto p = work + "/f.txt";
  edit(create(p, "v1\n"));
  edit(replace(p, "v1", "v2"));
  edit(insert(p, 1, "v3"));
  CAF_CHECK_EQUAL(slurp(p), "v2\nv3\n");
  auto r = edit(undo(p));
  CAF_CHECK_EQUAL(slurp(p), "v2\n");
  CAF_CHECK_EQUAL(r.text, "Last edit of " + p
                            + " undone (2 earlier edits can "
                              "still be undone). Here's the result of running "
                              "`cat -n` on a snippet of "
                            + p + ":\n     1\tv2\n");
  CAF_CHECK_EQUAL(r.structured, json({{"command", "undo_edit"},
                                      {"path", p},
                                      {"restored", "content"},
                                      {"remaining_undos", 2},
                                      {"first_line", 2},
                                      {"last_line", 1}}));
  CAF_CHECK_EQUAL(edit(undo(p)).structured["remaining_undos"], 1);
  CAF_CHECK_EQUAL(slurp(p), "v1\n");
  auto gone = edit(undo(p));
  CAF_CHECK_EQUAL(gone.text, "Last edit of " + p
                               + " undone: file_editor had "
                                 "created it, so it was removed.\n");
  CAF_CHECK_EQUAL(gone.structured["restored"], "removed");
  CAF_CHECK(!exists(p));
  CAF_CHECK_EQUAL(failure(undo(p), "nothing_to_undo"),
                  "No edit of " + p
                    + " to undo: undo_edit reverts the edits "
                      "file_editor made to this file in this session.");
}

CAF_TEST(undo_edit keeps the last max_undo edits of a file) {
  toolbox_options opts;
  opts.max_undo = 3;
  toolbox small{s, opts};
  auto p = work + "/bounded.txt";
  auto call = [&](const json& args) {
    auto r = small.call("file_editor", args);
    if (!r)
      CAF_FAIL("refused: " << r.error().message);
    return std::move(*r);
  };
  call(create(p, "v0\n"));
  for (int i = 1; i <= 5; ++i)
    call(replace(p, fmt::format("v{}", i - 1), fmt::format("v{}", i)));
  // Six edits made, three remembered: back to v2, then no further.
  for (int i = 0; i < 3; ++i)
    CAF_CHECK(!call(undo(p)).is_error);
  CAF_CHECK_EQUAL(slurp(p), "v2\n");
  auto r = call(undo(p));
  CAF_CHECK(r.is_error);
  CAF_CHECK_EQUAL(r.structured["error"], "nothing_to_undo");
  CAF_CHECK_EQUAL(slurp(p), "v2\n");
}

CAF_TEST(undo_edit keeps one history per file) {
  auto a = work + "/a.txt";
  auto b = work + "/b.txt";
  put(a, "a\n");
  put(b, "b\n");
  edit(replace(a, "a", "A"));
  edit(replace(b, "b", "B"));
  edit(undo(a));
  CAF_CHECK_EQUAL(slurp(a), "a\n");
  CAF_CHECK_EQUAL(slurp(b), "B\n");
  // The same file named with a redundant slash and dot.
  edit(undo(work + "//./b.txt"));
  CAF_CHECK_EQUAL(slurp(b), "b\n");
}

CAF_TEST(undo_edit never discards a change made by someone else) {
  auto p = work + "/f.txt";
  put(p, "mine\n");
  edit(replace(p, "mine", "edited"));
  // Another program rewrites the file (a new inode, as editors save).
  auto theirs = s.execute("echo theirs > f.tmp && mv f.tmp f.txt");
  SANDBOX_REQUIRE_OK(theirs);
  CAF_REQUIRE_EQUAL(theirs->exit_code, 0);
  CAF_CHECK_EQUAL(failure(undo(p), "conflict"),
                  p
                    + " changed since file_editor's last edit of it "
                      "(another program or a shell command wrote it); "
                      "undo_edit would discard that change, so nothing was "
                      "undone.");
  CAF_CHECK_EQUAL(slurp(p), "theirs\n");
}

CAF_TEST(another toolbox of the same session has no history) {
  auto p = work + "/f.txt";
  put(p, "a\n");
  edit(replace(p, "a", "b"));
  toolbox other{s};
  auto r = other.call("file_editor", undo(p));
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->structured["error"], "nothing_to_undo");
  CAF_CHECK_EQUAL(slurp(p), "b\n");
  // The history stays with the toolbox that made the edit.
  CAF_CHECK(!edit(undo(p)).is_error);
  CAF_CHECK_EQUAL(slurp(p), "a\n");
}

CAF_TEST(a toolbox of another session has no history) {
  auto p = work + "/f.txt";
  put(p, "a\n");
  edit(replace(p, "a", "b"));
  // A second session in the same working directory sees the file.
  auto s2 = make_session();
  CAF_REQUIRE_NOT_EQUAL(s2.info()->id, s.info()->id);
  toolbox other{s2};
  auto r = other.call("file_editor", undo(p));
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->is_error);
  CAF_CHECK_EQUAL(r->structured["error"], "nothing_to_undo");
  CAF_CHECK_EQUAL(r->text,
                  "No edit of " + p
                    + " to undo: undo_edit reverts "
                      "the edits file_editor made to this file in this "
                      "session.");
  CAF_CHECK_EQUAL(slurp(p), "b\n");
  // The first session's toolbox still undoes its edit.
  CAF_CHECK(!edit(undo(p)).is_error);
  CAF_CHECK_EQUAL(slurp(p), "a\n");
}

CAF_TEST_FIXTURE_SCOPE_END()
