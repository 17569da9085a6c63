#define CAF_SUITE cli.files
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cli_fixture.hpp"
#include "helpers/can_contain.hpp"

using sandbox::test::json_lines;
using sandbox::test::slurp;
using sandbox::test::spit;
using ordered_json = nlohmann::ordered_json;

namespace {

/// Output of one CLI run: exit status, stdout and stderr.
struct run_result {
  int status = -1;
  std::string out;
  std::string err;
};

/// A temporary tree: `root/w` is the CLI's working directory, `root/err`
/// catches stderr, `root/tmp` is its TMPDIR. `root` (a `temp_dir`, under
/// $TMPDIR) is searchable by every user, so `nobody` reaches the working
/// directory (see the permission test).
struct cli_files_fixture {
  sandbox::test::temp_dir dir;
  std::string root = dir.path;
  std::string wd = root + "/w";

  cli_files_fixture() {
    if (::mkdir(wd.c_str(), 0755) != 0
        || ::mkdir((root + "/tmp").c_str(), 0777) != 0
        || ::chmod((root + "/tmp").c_str(), 0777) != 0)
      CAF_FAIL("cannot prepare " << root);
  }

  std::string at(const std::string& rel) const {
    return wd + "/" + rel;
  }

  /// Runs `[prefix] sandbox <args>` in `wd`; `args` is a shell fragment.
  run_result run(const std::string& args, const std::string& prefix = "") {
    auto cmd = "cd '" + wd + "' && TMPDIR='" + root + "/tmp' " + prefix + " "
               + sandbox::test::cli_path() + " " + args + " 2>'" + root
               + "/err'";
    auto shell = sandbox::test::run_shell(cmd);
    return {shell.status, std::move(shell.out), slurp(root + "/err")};
  }
};

/// The first JSON line of `out` (by value: no reference into a temporary).
nlohmann::json first_json(const std::string& out) {
  auto lines = json_lines(out);
  return lines.empty() ? nlohmann::json{} : lines.front();
}

/// A member of the first JSON line of `out`, by value.
nlohmann::json field(const std::string& out, const char* key) {
  auto j = first_json(out);
  return j.contains(key) ? j[key] : nlohmann::json{};
}

size_t lines_in(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(cli_files_tests, cli_files_fixture)

CAF_TEST(write then read round trips all 256 byte values) {
  std::string bytes;
  for (int i = 0; i < 256; ++i)
    bytes += static_cast<char>(i);
  spit(root + "/in", bytes);
  auto w = run("write sub/bin < ../in");
  CAF_CHECK_EQUAL(w.status, 0);
  CAF_CHECK_EQUAL(w.out, "");
  CAF_CHECK_EQUAL(slurp(at("sub/bin")), bytes);
  auto r = run("read sub/bin");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, bytes);
  auto j = run("read --json sub/bin");
  CAF_CHECK_EQUAL(j.status, 0);
  auto lines = json_lines(j.out);
  CAF_REQUIRE_EQUAL(lines.size(), 2u);
  CAF_CHECK_EQUAL(lines[1]["type"], "read");
  CAF_CHECK_EQUAL(lines[1]["path"], "sub/bin");
  CAF_CHECK_EQUAL(lines[1]["size"], 256);
  CAF_CHECK_EQUAL(lines[0]["type"], "chunk");
  CAF_CHECK_EQUAL(lines[0]["offset"], 0);
  CAF_CHECK(!lines[0].contains("data"));
  std::string b64 = lines[0]["data_b64"];
  CAF_CHECK_EQUAL(b64.size(), 344u);
  CAF_CHECK_EQUAL(b64.substr(0, 8), "AAECAwQF");
}

CAF_TEST(write streams stdin of any size) {
  // 5 MiB plus a tail: several chunks of the CLI's stdin reader.
  std::string big;
  for (int i = 0; i < 5 * 1024 * 1024 + 123; ++i)
    big += static_cast<char>(i % 251);
  spit(root + "/big", big);
  auto w = run("write big --json < ../big");
  CAF_CHECK_EQUAL(w.status, 0);
  auto lines = json_lines(w.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  CAF_CHECK_EQUAL(lines[0]["type"], "written");
  CAF_CHECK_EQUAL(lines[0]["path"], "big");
  CAF_CHECK_EQUAL(lines[0]["bytes"], big.size());
  CAF_CHECK(slurp(at("big")) == big);
  // From a pipe, and empty input.
  CAF_CHECK_EQUAL(run("write piped", "printf 'a\\nb\\n' |").status, 0);
  CAF_CHECK_EQUAL(slurp(at("piped")), "a\nb\n");
  CAF_CHECK_EQUAL(run("write empty < /dev/null").status, 0);
  CAF_CHECK_EQUAL(slurp(at("empty")), "");
  struct stat st;
  CAF_CHECK_EQUAL(::stat(at("empty").c_str(), &st), 0);
}

CAF_TEST(read selects lines and prints text as data in json) {
  spit(at("t.txt"), "one\ntwo\nthree\n");
  CAF_CHECK_EQUAL(run("read t.txt --start-line 2").out, "two\nthree\n");
  CAF_CHECK_EQUAL(run("read t.txt --end-line 1").out, "one\n");
  CAF_CHECK_EQUAL(run("read t.txt --start-line 2 --end-line 2").out, "two\n");
  auto j = run("--json read t.txt --start-line 3");
  auto lines = json_lines(j.out);
  CAF_REQUIRE_EQUAL(lines.size(), 2u);
  CAF_CHECK_EQUAL(lines[0]["type"], "chunk");
  CAF_CHECK_EQUAL(lines[0]["data"], "three\n");
  CAF_CHECK(!lines[0].contains("data_b64"));
  CAF_CHECK_EQUAL(lines[1]["type"], "lines");
  CAF_CHECK_EQUAL(lines[1]["bytes"], 6);
  CAF_CHECK_EQUAL(run("read t.txt --start-line 0").status, 2);
  CAF_CHECK_EQUAL(run("read t.txt --start-line 3 --end-line 2").status, 2);
  CAF_CHECK_EQUAL(run("read").status, 2);
  CAF_CHECK_EQUAL(run("read t.txt --bogus").status, 2);
}

CAF_TEST(read errors are one line on stderr or a json error) {
  auto r = run("read missing");
  CAF_CHECK_EQUAL(r.status, 1);
  CAF_CHECK_EQUAL(r.out, "");
  CAF_CHECK_EQUAL(lines_in(r.err), 1u);
  CAF_CHECK(r.err.find("missing") != std::string::npos);
  auto j = run("read --json missing");
  CAF_CHECK_EQUAL(j.status, 1);
  auto lines = json_lines(j.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  CAF_CHECK_EQUAL(lines[0]["type"], "error");
  CAF_CHECK_EQUAL(lines[0]["code"], "path_not_found");
  ::mkdir(at("d").c_str(), 0755);
  auto d = run("read --json d");
  CAF_CHECK_EQUAL(d.status, 1);
  CAF_CHECK_EQUAL(field(d.out, "code"), "not_a_regular_file");
  // A FIFO nobody writes to: refused at once, never a hang.
  CAF_REQUIRE_EQUAL(::mkfifo(at("fifo").c_str(), 0644), 0);
  auto f = run("read --json fifo");
  CAF_CHECK_EQUAL(f.status, 1);
  CAF_CHECK_EQUAL(field(f.out, "code"), "not_a_regular_file");
  CAF_CHECK_EQUAL(run("read fifo").status, 1);
}

CAF_TEST(write if version is a compare and swap) {
  spit(at("cas"), "v1");
  auto st = first_json(run("stat --json cas").out);
  std::string v1 = st["version"];
  spit(root + "/v2", "v2");
  CAF_CHECK_EQUAL(run("write cas --if-version " + v1 + " < ../v2").status, 0);
  CAF_CHECK_EQUAL(slurp(at("cas")), "v2");
  // v1 is stale now: conflict, file untouched.
  auto stale = run("write cas --if-version " + v1 + " < ../v2");
  CAF_CHECK_EQUAL(stale.status, 1);
  CAF_CHECK_EQUAL(lines_in(stale.err), 1u);
  CAF_CHECK(stale.err.find("conflict") != std::string::npos);
  auto j = run("write --json cas --if-version " + v1 + " < /dev/null");
  CAF_CHECK_EQUAL(j.status, 1);
  CAF_CHECK_EQUAL(field(j.out, "code"), "conflict");
  CAF_CHECK_EQUAL(slurp(at("cas")), "v2");
  // '' means: the file must not exist.
  CAF_CHECK_EQUAL(run("write cas --if-version '' < ../v2").status, 1);
  CAF_CHECK_EQUAL(run("write fresh --if-version '' < ../v2").status, 0);
  CAF_CHECK_EQUAL(slurp(at("fresh")), "v2");
  CAF_CHECK_EQUAL(run("write").status, 2);
}

CAF_TEST(rm removes a file and fails on a missing one) {
  spit(at("x"), "x");
  auto r = run("rm x");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "");
  CAF_CHECK_EQUAL(::access(at("x").c_str(), F_OK), -1);
  auto again = run("rm x");
  CAF_CHECK_EQUAL(again.status, 1);
  CAF_CHECK_EQUAL(lines_in(again.err), 1u);
  auto j = run("rm --json x");
  CAF_CHECK_EQUAL(j.status, 1);
  CAF_CHECK_EQUAL(field(j.out, "code"), "path_not_found");
  spit(at("y"), "y");
  auto ok = json_lines(run("rm --json y").out);
  CAF_REQUIRE_EQUAL(ok.size(), 1u);
  CAF_CHECK_EQUAL(ok[0]["type"], "removed");
  CAF_CHECK_EQUAL(ok[0]["path"], "y");
  CAF_CHECK_EQUAL(run("rm").status, 2);
}

CAF_TEST(ls prints frames depth first then exactly one done) {
  ::mkdir(at("t").c_str(), 0755);
  ::mkdir(at("t/b").c_str(), 0755);
  ::mkdir(at("t/B").c_str(), 0755);
  spit(at("t/a"), "12345");
  spit(at("t/b/c"), "c");
  CAF_REQUIRE_EQUAL(::symlink("a", at("t/link").c_str()), 0);
  auto text = run("ls t");
  CAF_CHECK_EQUAL(text.status, 0);
  CAF_CHECK_EQUAL(text.out, "dir 4096 B/\nfile 5 a\ndir 4096 b/\n"
                            "symlink 1 link\n");
  auto j = run("ls --json t --depth 2");
  CAF_CHECK_EQUAL(j.status, 0);
  auto lines = json_lines(j.out);
  CAF_REQUIRE_EQUAL(lines.size(), 6u);
  std::vector<std::string> paths;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    CAF_CHECK_EQUAL(lines[i]["type"], "entry");
    paths.push_back(lines[i]["path"]);
  }
  CAF_CHECK_EQUAL(paths,
                  (std::vector<std::string>{"B", "a", "b", "b/c", "link"}));
  CAF_CHECK_EQUAL(lines[3]["name"], "c");
  CAF_CHECK_EQUAL(lines[3]["kind"], "file");
  CAF_CHECK_EQUAL(lines[3]["size"], 1);
  CAF_CHECK_EQUAL(lines[4]["kind"], "symlink");
  CAF_CHECK_EQUAL(lines[5]["type"], "done");
  CAF_CHECK_EQUAL(lines[5]["count"], 5);
  CAF_CHECK(lines[5]["error"].is_null());
  // The key order of an entry line is fixed.
  auto first = ordered_json::parse(j.out.substr(0, j.out.find('\n')));
  std::vector<std::string> keys;
  for (auto& [k, v] : first.items())
    keys.push_back(k);
  CAF_CHECK_EQUAL(
    keys, (std::vector<std::string>{"type", "path", "name", "kind", "size"}));
  // Depth 0: nothing but the done frame.
  auto zero = json_lines(run("ls --json t --depth 0").out);
  CAF_REQUIRE_EQUAL(zero.size(), 1u);
  CAF_CHECK_EQUAL(zero[0]["type"], "done");
  CAF_CHECK_EQUAL(zero[0]["count"], 0);
  CAF_CHECK_EQUAL(run("ls t --depth 0").out, "");
  // Default PATH: the working directory.
  CAF_CHECK_EQUAL(run("ls").out, "dir 4096 t/\n");
  CAF_CHECK_EQUAL(run("ls t --depth -1").status, 2);
}

CAF_TEST(ls of a missing path ends with a done carrying the error) {
  auto j = run("ls --json missing");
  CAF_CHECK_EQUAL(j.status, 1);
  auto lines = json_lines(j.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  CAF_CHECK_EQUAL(lines[0]["type"], "done");
  CAF_CHECK_EQUAL(lines[0]["count"], 0);
  CAF_CHECK_EQUAL(lines[0]["error"]["code"], "path_not_found");
  CAF_CHECK(lines[0]["error"]["message"].is_string());
  auto text = run("ls missing");
  CAF_CHECK_EQUAL(text.status, 1);
  CAF_CHECK_EQUAL(text.out, "");
  CAF_CHECK_EQUAL(lines_in(text.err), 1u);
}

CAF_TEST(ls as an unprivileged user reports permission denied in done) {
  // Skipped against a remote node: the listing runs there with the node's
  // rights (root here), whoever runs the CLI.
  if (sandbox::test::remote_mode())
    return;
  ::mkdir(at("p").c_str(), 0755);
  ::mkdir(at("p/a").c_str(), 0755);
  ::mkdir(at("p/b").c_str(), 0700);
  spit(at("p/b/inner"), "i");
  spit(at("p/c"), "c");
  // Root may read anything: run the CLI as nobody in a child process.
  std::string as = ::geteuid() == 0
                     ? "setpriv --reuid=65534 --regid=65534 --clear-groups"
                     : "";
  // A contained session of nobody: the node of nobody's CLI has no cgroup
  // controllers here, so the default memory and process limits, which
  // would make the session fail, are lifted (docs/security.md "Limits").
  std::string lifted = sandbox::test::contained_run() && !as.empty()
                         ? "--memory 0 --pids 0 "
                         : "";
  auto j = run(lifted + "ls --json p --depth 3", as);
  CAF_CHECK_EQUAL(j.status, 1);
  auto lines = json_lines(j.out);
  CAF_REQUIRE_EQUAL(lines.size(), 3u);
  CAF_CHECK_EQUAL(lines[0]["path"], "a");
  CAF_CHECK_EQUAL(lines[1]["path"], "b");
  CAF_CHECK_EQUAL(lines[2]["type"], "done");
  CAF_CHECK_EQUAL(lines[2]["count"], 2);
  CAF_CHECK_EQUAL(lines[2]["error"]["code"], "permission_denied");
}

CAF_TEST(stat prints the path itself with a version) {
  spit(at("s"), "abc");
  CAF_REQUIRE_EQUAL(::symlink("s", at("l").c_str()), 0);
  auto j = run("stat --json s");
  CAF_CHECK_EQUAL(j.status, 0);
  auto obj = ordered_json::parse(j.out);
  std::vector<std::string> keys;
  for (auto& [k, v] : obj.items())
    keys.push_back(k);
  CAF_CHECK_EQUAL(keys, (std::vector<std::string>{"type", "path", "kind",
                                                  "size", "mtime_ns", "dev",
                                                  "ino", "version"}));
  CAF_CHECK_EQUAL(obj["kind"], "file");
  CAF_CHECK_EQUAL(obj["size"], 3);
  struct stat st;
  CAF_REQUIRE_EQUAL(::lstat(at("s").c_str(), &st), 0);
  CAF_CHECK_EQUAL(obj["ino"], st.st_ino);
  std::string version = obj["version"];
  CAF_CHECK_EQUAL(version.size(), 16u);
  // Stable while nothing changes, changed by a chmod.
  std::string again = field(run("--json stat s").out, "version");
  CAF_CHECK_EQUAL(again, version);
  ::chmod(at("s").c_str(), 0600);
  std::string changed = field(run("stat s --json").out, "version");
  CAF_CHECK_NOT_EQUAL(changed, version);
  auto link = json_lines(run("stat --json l").out);
  CAF_CHECK_EQUAL(link.at(0)["kind"], "symlink");
  auto text = run("stat s");
  CAF_CHECK_EQUAL(text.status, 0);
  CAF_CHECK(text.out.rfind("kind=file size=3 mtime_ns=", 0) == 0);
  CAF_CHECK_EQUAL(lines_in(text.out), 1u);
  auto missing = run("stat nope");
  CAF_CHECK_EQUAL(missing.status, 1);
  CAF_CHECK_EQUAL(lines_in(missing.err), 1u);
  CAF_CHECK_EQUAL(run("stat").status, 2);
}

CAF_TEST(file commands of a contained session see its view) {
  if (sandbox::test::remote_mode()) {
    // --isolation makes a session; the remote stand-in names its own.
    CAF_MESSAGE("skipped: --isolation needs the embedded node");
    return;
  }
  if (!sandbox::test::host_can_contain())
    return;
  spit(root + "/in", "x");
  // A directory the session sees but may not change: in the current
  // directory (the build tree), since the host's /tmp is not in its view.
  sandbox::test::outside_dir outside;
  auto target = outside.path + "/escaped";
  // Outside the working directory, the home, /tmp and /dev/shm: refused,
  // naming the path, and nothing is made.
  auto j = run("--isolation contained write --json " + target + " < ../in");
  CAF_CHECK_EQUAL(j.status, 1);
  CAF_CHECK_EQUAL(field(j.out, "code"), "permission_denied");
  auto t = run("--isolation contained write " + target + " < ../in");
  CAF_CHECK_EQUAL(t.status, 1);
  CAF_CHECK(t.err.find(target) != std::string::npos);
  struct stat st;
  CAF_CHECK_NOT_EQUAL(::lstat(target.c_str(), &st), 0);
  // Inside the working directory, as without isolation.
  CAF_CHECK_EQUAL(run("--isolation contained write inside < ../in").status, 0);
  CAF_CHECK_EQUAL(slurp(at("inside")), "x");
  auto r = run("--isolation contained read inside");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out, "x");
  // /tmp is the session's own: a file in the host's /tmp is not in its
  // view. The host's /tmp itself is the subject here, whatever TMPDIR says
  // (only the working directory comes back into the session's /tmp).
  char host_file[] = "/tmp/sandbox-cli-host-XXXXXX";
  int fd = ::mkstemp(host_file);
  CAF_REQUIRE(fd >= 0);
  ::close(fd);
  auto h = run("--isolation contained read --json " + std::string{host_file});
  ::unlink(host_file);
  CAF_CHECK_EQUAL(h.status, 1);
  CAF_CHECK_EQUAL(field(h.out, "code"), "path_not_found");
}

CAF_TEST_FIXTURE_SCOPE_END()
