#define CAF_SUITE cli.limits
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The limits of contained sessions (--memory, --pids, --cpu, --tmp-size,
// --max-connections; docs/cli.md, docs/security.md "Limits") and the home
// of a contained session, its own (docs/semantics.md §4). Reliability-2
// A10 and A4. The real CLI on its embedded node: the remote stand-in runs
// commands in a session it made (--session), which takes no limits.

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "cli_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/temp_dir.hpp"

using sandbox::test::json_lines;
using sandbox::test::names_in;
using sandbox::test::run_shell;
using sandbox::test::temp_dir;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Runs the real CLI in `dir` with TMPDIR=`dir`/tmp (its own user
/// directory, so that the shared home and the own homes are this test's).
sandbox::test::cli_result cli_in(const temp_dir& dir, const std::string& args) {
  ::mkdir(dir.at("tmp").c_str(), 0755);
  return run_shell("cd '" + dir.path + "' && TMPDIR='" + dir.at("tmp")
                   + "' timeout -s KILL 120 " SANDBOX_CLI " " + args);
}

/// The shared home of the `none` sessions of `dir`'s CLIs.
std::string shared_home(const temp_dir& dir) {
  return dir.at("tmp/sandbox-" + std::to_string(::geteuid()) + "/home");
}

/// The directory of the own homes of `dir`'s contained sessions.
std::string own_homes(const temp_dir& dir) {
  return dir.at("tmp/sandbox-" + std::to_string(::geteuid()) + "/homes");
}

/// Whether a process whose command line holds `word` as an argument runs.
bool running(const std::string& word) {
  DIR* d = ::opendir("/proc");
  if (d == nullptr)
    return false;
  bool found = false;
  while (auto* e = ::readdir(d)) {
    std::ifstream in{std::string{"/proc/"} + e->d_name + "/cmdline"};
    std::string arg;
    while (!found && std::getline(in, arg, '\0'))
      found = arg == word;
  }
  ::closedir(d);
  return found;
}

/// Whether this test should run: the host gives contained sessions (and
/// the controller a limit needs), and the suite runs the embedded node.
bool can_run(const char* controller = nullptr) {
  if (sandbox::test::remote_mode()) {
    CAF_MESSAGE("skipped: the stand-in runs commands in a session it made");
    return false;
  }
  if (!sandbox::test::host_can_contain())
    return false;
  if (controller != nullptr
      && !sandbox::host_isolation().has_controller(controller)) {
    CAF_MESSAGE("skipped: no cgroup " << controller << " controller");
    return false;
  }
  return true;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(limit_tests, temp_dir)

// -- the options --------------------------------------------------------------

CAF_TEST(a bad limit value is a usage error naming the option and value) {
  for (auto [args, option, value] :
       {std::tuple{"--memory 12X", "--memory", "12X"},
        std::tuple{"--memory ''", "--memory", "\"\""},
        std::tuple{"--memory 2GG", "--memory", "2GG"},
        std::tuple{"--tmp-size -1", "--tmp-size", "-1"},
        std::tuple{"--pids many", "--pids", "many"},
        std::tuple{"--cpu 1.5", "--cpu", "1.5"},
        std::tuple{"--max-connections 99999999999", "--max-connections",
                   "99999999999"}}) {
    auto r = cli_in(*this, std::string{"--isolation contained "} + args
                             + " run -- 'touch ran' 2>&1");
    CAF_CHECK_EQUAL(r.status, 2);
    if (!has(r.out, option) || !has(r.out, value))
      CAF_FAIL("the error of " << args << " names neither: " << r.out);
    CAF_CHECK(::access(at("ran").c_str(), F_OK) != 0);
  }
}

CAF_TEST(limits are for the contained sessions a command creates) {
  // A session that is not contained has no limits to set.
  auto none = cli_in(*this, "--isolation none --pids 64 run -- 'touch ran' "
                            "2>&1");
  CAF_CHECK_EQUAL(none.status, 2);
  CAF_CHECK(has(none.out, "--pids limits contained sessions"));
  auto plain = cli_in(*this, "--memory 1G run -- 'touch ran' 2>&1");
  CAF_CHECK_EQUAL(plain.status, 2);
  CAF_CHECK(has(plain.out, "--memory limits contained sessions"));
  // An existing session, session list and session stop make none.
  for (auto words :
       {"--session x run -- 'touch ran'", "session list", "session stop x"}) {
    auto r = cli_in(*this, std::string{"--cpu 10 "} + words + " 2>&1");
    CAF_CHECK_EQUAL(r.status, 2);
    CAF_CHECK(has(r.out, "--cpu limits the contained sessions"));
  }
  CAF_CHECK(::access(at("ran").c_str(), F_OK) != 0);
}

// -- reaching a limit (A10) ---------------------------------------------------

CAF_TEST(a fork bomb under pids 64 ends with process_limit and leaves nothing) {
  if (!can_run("pids"))
    return;
  // Each background sleep carries an argument no other process has.
  auto word = std::to_string(3600 + ::getpid() % 1000) + ".4242";
  auto r = cli_in(*this, "--json --isolation contained --pids 64 run -- "
                         "'while :; do sleep "
                           + word + " & done'");
  auto lines = json_lines(r.out);
  CAF_REQUIRE(!lines.empty());
  auto& last = lines.back();
  CAF_CHECK_EQUAL(last["type"], "result");
  CAF_CHECK_EQUAL(last["ended_by"], "process_limit");
  CAF_CHECK_NOT_EQUAL(r.status, 0);
  bool reported = false;
  for (auto& v : last["violations"])
    reported = reported
               || (v["kind"] == "process_limit"
                   && v["detail"]
                        == "processes "
                           "64");
  CAF_CHECK(reported);
  // The CLI stopped the session before it exited: none of the sleeps runs.
  CAF_CHECK(!running(word));
}

CAF_TEST(a memory hog under memory 64M ends with memory_limit) {
  if (!can_run("memory"))
    return;
  auto child = sandbox::test::visible_program(SANDBOX_TEST_CHILD);
  auto r = cli_in(*this, "--json --isolation contained --memory 64M"
                           + sandbox::test::allow_program(child)
                           + "run -- "
                             "'ASAN_OPTIONS=detect_leaks=0 exec "
                           + child + " alloc 1024'");
  auto lines = json_lines(r.out);
  CAF_REQUIRE(!lines.empty());
  auto& last = lines.back();
  CAF_CHECK_EQUAL(last["type"], "result");
  CAF_CHECK_EQUAL(last["exit_code"], 128 + 9);
  CAF_CHECK_EQUAL(last["ended_by"], "memory_limit");
  CAF_CHECK_EQUAL(r.status, 128 + 9);
  // Below the limit the same program is left alone.
  auto small = cli_in(*this, "--isolation contained --memory 256M"
                               + sandbox::test::allow_program(child)
                               + "run -- "
                                 "'ASAN_OPTIONS=detect_leaks=0 exec "
                               + child + " alloc 16'");
  CAF_CHECK_EQUAL(small.status, 0);
  CAF_CHECK_EQUAL(small.out, "allocated\n");
}

CAF_TEST(cpu 1 ends a spinning command with cpu_limit) {
  if (!can_run())
    return;
  auto child = sandbox::test::visible_program(SANDBOX_TEST_CHILD);
  auto r = cli_in(*this, "--json --isolation contained --cpu 1"
                           + sandbox::test::allow_program(child)
                           + "run -- 'exec " + child + " spin'");
  auto lines = json_lines(r.out);
  CAF_REQUIRE(!lines.empty());
  CAF_CHECK_EQUAL(lines.back()["ended_by"], "cpu_limit");
}

// -- the home of a contained session (A4) -------------------------------------

CAF_TEST(a contained session has a home of its own and not the shared one) {
  if (!can_run())
    return;
  auto r = cli_in(*this, "--isolation contained run -- 'echo mine > "
                         "$HOME/note; echo $HOME'");
  CAF_CHECK_EQUAL(r.status, 0);
  auto home = r.out.substr(0, r.out.find('\n'));
  CAF_CHECK_EQUAL(home.rfind(own_homes(*this) + "/", 0), 0u);
  // Not in the shared home of none sessions, and gone with the session.
  CAF_CHECK(::access((shared_home(*this) + "/note").c_str(), F_OK) != 0);
  CAF_CHECK(::access(home.c_str(), F_OK) != 0);
  CAF_CHECK(names_in(own_homes(*this)).empty());
  // A none session keeps the shared home.
  auto none = cli_in(*this, "--isolation none run -- 'echo $HOME'");
  CAF_CHECK_EQUAL(none.out, shared_home(*this) + "\n");
}

CAF_TEST_FIXTURE_SCOPE_END()
