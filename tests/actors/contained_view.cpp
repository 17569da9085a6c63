#define CAF_SUITE actors.contained_view
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// What a contained command sees (docs/security.md, "What a contained
// command sees"): a view that starts empty, the system's read-only parts,
// its own directories and what allow_read / allow_write add; nothing else.
// Honest work (a compiler, make, Python, git) still runs in it.

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "contained_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/host_listener.hpp"
#include "helpers/violations.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::isolation_mode;
using sandbox::violation_kind;
using sandbox::actors::blocking_session;
using sandbox::actors::session_config;
using sandbox::test::count_violations;
using sandbox::test::host_can_contain;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, {}};
}

struct fixture : sandbox::test::contained_fixture {
  /// Host paths the node adds to every view (the test's helper programs).
  std::vector<std::string> node_allowed;

  fixture() {
    auto cfg = sandbox::test::contained_config();
    node_allowed = cfg.isolation_allow_read;
    start(cfg);
    work = dir.path + "/wd";
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(contained_view_tests, fixture)

CAF_TEST(the root holds the system parts and the session directories only) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto r = run(s, "ls -A /");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  std::istringstream names{r.stdout_data};
  std::string name;
  while (std::getline(names, name)) {
    bool allowed = false;
    for (auto& p : node_allowed)
      allowed = allowed || p.rfind("/" + name + "/", 0) == 0;
    CHECK_THAT(allowed || name == "usr" || name == "bin" || name == "sbin"
                 || name.rfind("lib", 0) == 0 || name == "etc" || name == "opt"
                 || name == "dev" || name == "proc" || name == "tmp"
                 || dir.path.rfind("/" + name + "/", 0) == 0,
               "unexpected /" << name << " in the view");
  }
  (void) s.stop();
}

CAF_TEST(host secrets and services outside the view cannot be reached) {
  if (!host_can_contain())
    return;
  // A host service on a unix socket outside the view (the host's /tmp).
  auto sock_path = dir.path + "/host.sock";
  int listener = sandbox::test::host_unix_socket(sock_path, SOCK_STREAM, 0755);
  CAF_REQUIRE(listener >= 0);
  auto s = make_session();
  // What every session of the node may read (the test's helper programs:
  // below /var/tmp when the build tree is below /tmp) brings the way to it
  // into the view, and nothing else of its parents.
  auto& allowed = node_allowed;
  for (auto* path :
       {"/root", "/home", "/run", "/var", "/dev/vcs", "/dev/console", "/sys"}) {
    auto r = run(s, std::string{"ls -A "} + path);
    std::set<std::string> way;
    auto prefix = std::string{path} + "/";
    for (auto& a : allowed)
      if (a.rfind(prefix, 0) == 0)
        way.insert(
          a.substr(prefix.size(), a.find('/', prefix.size()) - prefix.size()));
    if (way.empty()) {
      CHECK_THAT(r.exit_code != 0, path << " is in the view");
      CAF_CHECK_EQUAL(r.stdout_data, "");
      continue;
    }
    std::string expected;
    for (auto& w : way)
      expected += w + "\n";
    CAF_CHECK_EQUAL(r.stdout_data, expected);
  }
  // /etc is there, its secrets are not readable.
  auto etc = run(s, "cat /etc/hostname > /dev/null && cat /etc/shadow");
  CAF_CHECK_NOT_EQUAL(etc.exit_code, 0);
  CAF_CHECK_EQUAL(etc.stdout_data, "");
  if (sandbox::host_isolation().read_watch) {
    CAF_CHECK(sandbox::test::has_violation(
      etc.violations, sandbox::violation_kind::read_denied, "/etc/shadow"));
  }
  auto sock = run(s, "python3 -c 'import socket,sys; "
                     "socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "
                       + sock_path);
  CAF_CHECK_NOT_EQUAL(sock.exit_code, 0);
  CAF_CHECK(sock.stderr_data.find("FileNotFoundError") != std::string::npos);
  ::close(listener);
  (void) s.stop();
}

CAF_TEST(the dev directory holds the harmless devices and a pts of its own) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto r = run(s, "ls /dev | tr '\\n' ' '; echo x > /dev/null && "
                  "head -c 4 /dev/urandom | wc -c && "
                  "python3 -c 'import os; m, t = os.openpty(); "
                  "print(os.ttyname(t))'");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data,
                  "fd full null ptmx pts random shm stderr stdin stdout tty "
                  "urandom zero 4\n/dev/pts/0\n");
  (void) s.stop();
}

CAF_TEST(
  every mount of the view is nosuid and nodev but the terminals and devices) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  // Fields 5 and 6 of mountinfo: the mount point and its options.
  auto r = run(s, "cut -d' ' -f5,6 /proc/self/mountinfo");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  std::istringstream lines{r.stdout_data};
  std::string point;
  std::string opts;
  size_t seen = 0;
  while (lines >> point >> opts) {
    ++seen;
    auto has = [&](const std::string& o) {
      return ("," + opts + ",").find("," + o + ",") != std::string::npos;
    };
    CHECK_THAT(has("nosuid"), point << " is not nosuid: " << opts);
    bool device = point == "/dev/null" || point == "/dev/zero"
                  || point == "/dev/full" || point == "/dev/random"
                  || point == "/dev/urandom" || point == "/dev/tty"
                  || point == "/dev/pts";
    if (!device)
      CHECK_THAT(has("nodev"), point << " is not nodev: " << opts);
  }
  CAF_CHECK_GREATER(seen, 5u);
  (void) s.stop();
}

CAF_TEST(allow read and allow write add host paths to the view) {
  if (!host_can_contain())
    return;
  ::mkdir((out.path + "/ro").c_str(), 0755);
  ::mkdir((out.path + "/rw").c_str(), 0755);
  std::ofstream{out.path + "/ro/f"} << "READ-ME";
  ::mkdir(dir.at("hidden").c_str(), 0755);
  std::ofstream{dir.at("hidden/f")} << "HIDDEN";
  session_config cfg;
  cfg.allow_read = {out.path + "/ro"};
  cfg.allow_write = {out.path + "/rw"};
  auto s = make_session(cfg);
  auto r = run(s, "cat " + out.path + "/ro/f && echo made > " + out.path
                    + "/rw/new && cat " + out.path + "/rw/new");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data, "READ-ME"
                                 "made\n");
  CAF_CHECK_EQUAL(slurp(out.path + "/rw/new"), "made\n");
  auto w = run(s, "echo x > " + out.path + "/ro/f");
  CAF_CHECK_NOT_EQUAL(w.exit_code, 0);
  CAF_CHECK_EQUAL(slurp(out.path + "/ro/f"), "READ-ME");
  CAF_CHECK_EQUAL(count_violations(w.violations, violation_kind::write_denied,
                                   out.path + "/ro/f"),
                  1u);
  auto h = run(s, "cat " + dir.at("hidden/f"));
  CAF_CHECK_NOT_EQUAL(h.exit_code, 0);
  CAF_CHECK_EQUAL(h.stdout_data, "");
  (void) s.stop();
}

CAF_TEST(allow read of a missing path is refused and named) {
  if (!host_can_contain())
    return;
  session_config cfg;
  cfg.home_directory = dir.path + "/home";
  cfg.allow_read = {out.path + "/missing"};
  auto s = blocking_session::create(*node, cfg);
  CAF_REQUIRE(!s);
  CAF_CHECK(s.error().code == sandbox::errc::invalid_argument);
  CAF_CHECK(s.error().message.find(out.path + "/missing") != std::string::npos);
}

CAF_TEST(honest work builds and runs in the view) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto c = run(s, "printf 'int main(void){return 7;}\\n' > m.c && "
                  "printf 'm: m.c\\n\\tcc -o m m.c\\n' > Makefile && "
                  "make -s && ./m; echo $?");
  CAF_CHECK_EQUAL(c.stdout_data, "7\n");
  CHECK_THAT(c.violations.empty(), c.stderr_data);
  auto py = run(s, "mkdir -p pkg && echo 'VALUE = 42' > pkg/__init__.py && "
                   "python3 -c 'import pkg; print(pkg.VALUE)'");
  CAF_CHECK_EQUAL(py.exit_code, 0);
  CAF_CHECK_EQUAL(py.stdout_data, "42\n");
  CAF_CHECK_EQUAL(run(s, "echo kept > $HOME/note").exit_code, 0);
  auto home = run(s, "cat $HOME/note");
  CAF_CHECK_EQUAL(home.stdout_data, "kept\n");
  auto git = run(s, "git init -q repo && cd repo && echo a > a && "
                    "git add a && git -c user.name=t -c user.email=t@t "
                    "commit -qm first && git log --format=%s");
  CAF_CHECK_EQUAL(git.exit_code, 0);
  CAF_CHECK_EQUAL(git.stdout_data, "first\n");
  (void) s.stop();
}

CAF_TEST_FIXTURE_SCOPE_END()
