#define CAF_SUITE actors.contained_host
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The back-channels from a contained command to the host that no file or
// network rule covers (docs/security.md): the terminal of whoever started
// the node and the host's other terminals, ioctls that type into a
// terminal, io_uring (whose operations no seccomp filter sees), unix
// sockets bound outside, the node's environment and its cgroup path. Each
// attempt must fail from inside, and each refusal be reported. Skipped,
// with the reason, only where the host cannot give contained sessions.

#include <pty.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "contained_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/violations.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::exec_options;
using sandbox::isolation_mode;
using sandbox::violation_kind;
using sandbox::actors::blocking_session;
using sandbox::actors::session_config;
using sandbox::test::count_violations;
using sandbox::test::host_can_contain;

namespace {

/// A variable only the node's process has, with a name no host sets: set
/// before main (setenv races with the threads of nodes already running),
/// so the runtimes of this suite see it in the node's environment.
const std::string node_only = [] {
  auto name = "SANDBOX_TEST_NODE_ONLY_" + std::to_string(::getpid());
  ::setenv(name.c_str(), "node-secret", 1);
  return name;
}();

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

/// `python3 - ARGS` reading `script` from a here-document.
std::string python(const std::string& script, const std::string& args = "") {
  return "python3 - " + args + " <<'EOF'\n" + script + "EOF\n";
}

struct fixture : sandbox::test::contained_fixture {
  fixture() {
    start();
    // The rest of `out` is what the session sees but may not change.
    work = out.path + "/wd";
    readable = {out.path};
  }
};

/// Runs in a new session of `f` the Python `lines`, which make a system
/// call through `libc.syscall` and keep its result in `r`, and checks that
/// the call was refused (EPERM) and reported once, as `name`.
void check_refused_syscall(fixture& f, const std::string& lines,
                           const std::string& name) {
  auto s = f.make_session();
  auto r = f.run(
    s, python("import ctypes, errno\n"
              "libc = ctypes.CDLL(None, use_errno=True)\n"
              + lines + "print(r, errno.errorcode.get(ctypes.get_errno()))\n"));
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data, "-1 EPERM\n");
  CAF_CHECK_EQUAL(
    count_violations(r.violations, violation_kind::syscall_denied, name), 1u);
  (void) s.stop();
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(contained_host_tests, fixture)

CAF_TEST(a command leads a session of its own without a terminal) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  // Fields 5 and 6 of stat: the process group and the session. The group
  // is still the command's pid (the node's group bookkeeping needs it).
  auto r = run(s, "echo $$; cut -d' ' -f5,6 /proc/$$/stat; "
                    + python("import errno, os\n"
                             "try:\n"
                             "    os.open('/dev/tty', os.O_RDONLY)\n"
                             "    print('opened')\n"
                             "except OSError as e:\n"
                             "    print(errno.errorcode[e.errno])\n"));
  CAF_CHECK_EQUAL(r.exit_code, 0);
  auto out = lines(r.stdout_data);
  CAF_REQUIRE_EQUAL(out.size(), 3u);
  CAF_CHECK_EQUAL(out[1], out[0] + " " + out[0]);
  // A new session has no controlling terminal: whatever terminal the node
  // runs in, there is none to open.
  CAF_CHECK_EQUAL(out[2], "ENXIO");
  (void) s.stop();
}

CAF_TEST(typing into a terminal is refused and reported) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  // On its stdin (/dev/null) the kernel would say ENOTTY: EPERM is the
  // node's refusal. Then on a terminal of its own, made its controlling
  // one by a child that leads a new session (the case the kernel lets
  // through with dev.tty.legacy_tiocsti), where the view gives it one.
  auto r = run(s, python("import errno, fcntl, os, termios\n"
                         "def tiocsti(fd):\n"
                         "    try:\n"
                         "        fcntl.ioctl(fd, termios.TIOCSTI, b'x')\n"
                         "        return 'typed'\n"
                         "    except OSError as e:\n"
                         "        return errno.errorcode[e.errno]\n"
                         "print(tiocsti(0), flush=True)\n"
                         "try:\n"
                         "    m, t = os.openpty()\n"
                         "except OSError as e:\n"
                         "    print('no terminal', flush=True)\n"
                         "    raise SystemExit(0)\n"
                         "name = os.ttyname(t)\n"
                         "pid = os.fork()\n"
                         "if pid == 0:\n"
                         "    os.setsid()\n"
                         "    fd = os.open(name, os.O_RDWR)\n"
                         "    os.close(os.open('/dev/tty', os.O_RDONLY))\n"
                         "    print(tiocsti(fd), flush=True)\n"
                         "    os._exit(0)\n"
                         "os.waitpid(pid, 0)\n"));
  CAF_CHECK_EQUAL(r.exit_code, 0);
  auto out = lines(r.stdout_data);
  CAF_REQUIRE_EQUAL(out.size(), 2u);
  CAF_CHECK_EQUAL(out[0], "EPERM");
  if (out[1] == "no terminal") {
    CAF_MESSAGE("the session's view gives a command no terminal of its own: "
                "only the refusal on stdin was tried");
    CAF_CHECK_EQUAL(count_violations(r.violations,
                                     violation_kind::syscall_denied,
                                     "ioctl TIOCSTI"),
                    1u);
  } else {
    CAF_CHECK_EQUAL(out[1], "EPERM");
    CAF_CHECK_EQUAL(count_violations(r.violations,
                                     violation_kind::syscall_denied,
                                     "ioctl TIOCSTI"),
                    2u);
  }
  for (auto& v : r.violations)
    CAF_CHECK_EQUAL(v.execution, 1u);
  auto seen = s.violations();
  SANDBOX_REQUIRE_OK(seen);
  CAF_CHECK_GREATER_OR_EQUAL(
    count_violations(*seen, violation_kind::syscall_denied, "ioctl TIOCSTI"),
    1u);
  (void) s.stop();
}

CAF_TEST(a terminal of the host is not in the session view) {
  if (!host_can_contain())
    return;
  // A terminal of the test's, as the one a CLI runs in: readable by the
  // node's user, so by a command that could name it.
  int master = -1;
  int slave = -1;
  CAF_REQUIRE_EQUAL(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  std::string name = ::ttyname(slave);
  auto s = make_session();
  auto r = run(s, python("import errno, os, sys\n"
                         "try:\n"
                         "    os.open(sys.argv[1], os.O_RDONLY | os.O_NOCTTY)\n"
                         "    print('opened')\n"
                         "except OSError as e:\n"
                         "    print(errno.errorcode[e.errno])\n",
                         name));
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data, "ENOENT\n");
  ::close(master);
  ::close(slave);
  (void) s.stop();
}

CAF_TEST(a mount flag change is refused and reported) {
  if (!host_can_contain())
    return;
  // mount_setattr(AT_FDCWD, "/usr", 0, {attr_clr = MOUNT_ATTR_RDONLY}):
  // the read-only bind of the view made writable.
  check_refused_syscall(*this,
                        "attr = (ctypes.c_uint64 * 4)(0, 1, 0, 0)\n"
                        "r = libc.syscall(442, -100, b'/usr', 0, attr, 32)\n",
                        "mount_setattr");
}

CAF_TEST(an io_uring is refused and reported) {
  if (!host_can_contain())
    return;
  check_refused_syscall(*this,
                        "params = ctypes.create_string_buffer(120)\n"
                        "r = libc.syscall(425, 4, params)\n",
                        "io_uring_setup");
}

CAF_TEST(a unix socket bound outside is refused and reported) {
  if (!host_can_contain())
    return;
  ::mkdir((out.path + "/outside").c_str(), 0755);
  auto s = make_session();
  auto outside = out.path + "/outside/s.sock";
  auto r = run(s, python("import errno, socket, sys\n"
                         "for path in sys.argv[1:]:\n"
                         "    s = socket.socket(socket.AF_UNIX)\n"
                         "    try:\n"
                         "        s.bind(path)\n"
                         "        print('bound')\n"
                         "    except OSError as e:\n"
                         "        print(errno.errorcode[e.errno])\n",
                         "s.sock " + outside));
  CAF_CHECK_EQUAL(r.exit_code, 0);
  // EROFS: the outside directory is in the view read-only (allow_read).
  CAF_CHECK(r.stdout_data == "bound\nEACCES\n"
            || r.stdout_data == "bound\nEROFS\n");
  struct stat st;
  CAF_CHECK_NOT_EQUAL(::stat(outside.c_str(), &st), 0);
  // The one inside the working directory is no violation.
  CAF_REQUIRE_EQUAL(r.violations.size(), 1u);
  CAF_CHECK(r.violations[0].kind == violation_kind::write_denied);
  CAF_CHECK_EQUAL(r.violations[0].detail, outside);
  (void) s.stop();
}

CAF_TEST(the node environment is not the command environment) {
  if (!host_can_contain())
    return;
  CAF_REQUIRE_EQUAL(std::getenv(node_only.c_str()), std::string{"node-secret"});
  session_config cfg;
  cfg.env = {{"SESSION_VAR", "s"}};
  auto s = make_session(cfg);
  exec_options opts;
  opts.env = {{"CALL_VAR", "c"}};
  auto r = run(s,
               "echo \"${" + node_only
                 + "-unset} $SESSION_VAR $CALL_VAR $TMPDIR\"; "
                   "env | cut -d= -f1 | sort",
               opts);
  CAF_CHECK_EQUAL(r.exit_code, 0);
  auto out = lines(r.stdout_data);
  CAF_REQUIRE(!out.empty());
  CAF_CHECK_EQUAL(out[0], "unset s c /tmp");
  // The fixed base (PATH, HOME, SANDBOX_PORT, TMPDIR, LANG where the node
  // has it, the sanitizers' options in a sanitizer build), what the
  // session and the call add, the marker, and what the shell itself
  // exports.
  const std::set<std::string> allowed
    = {"PATH",         "HOME",         "SANDBOX_PORT",  "TMPDIR",
       "LANG",         "SANDBOX_EXEC", "SESSION_VAR",   "CALL_VAR",
       "PWD",          "OLDPWD",       "SHLVL",         "_",
       "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"};
  std::set<std::string> names{out.begin() + 1, out.end()};
  for (auto& name : names)
    if (allowed.count(name) == 0)
      CAF_ERROR("a variable the session did not set: " << name);
  for (auto* name : {"PATH", "HOME", "SANDBOX_PORT", "TMPDIR", "SANDBOX_EXEC",
                     "SESSION_VAR", "CALL_VAR"})
    if (names.count(name) == 0)
      CAF_ERROR("missing: " << name);
  (void) s.stop();
}

CAF_TEST(the cgroup a command sees is not the host path) {
  if (!host_can_contain())
    return;
  // The node's own cgroup per hierarchy ("0::/a/b", "4:memory:/c").
  std::ifstream self{"/proc/self/cgroup"};
  std::vector<std::string> host;
  for (std::string line; std::getline(self, line);) {
    auto path = line.substr(line.find(':', line.find(':') + 1) + 1);
    if (path != "/")
      host.push_back(path);
  }
  auto s = make_session();
  auto r = run(s, "cat /proc/self/cgroup");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  auto seen = lines(r.stdout_data);
  CAF_REQUIRE(!seen.empty());
  for (auto& line : seen) {
    auto path = line.substr(line.find(':', line.find(':') + 1) + 1);
    // Relative to the session's init: its own cgroup, a sibling, or one
    // the command joined below the init's.
    bool relative = path == "/" || path.compare(0, 4, "/../") == 0
                    || path.find('/', 1) == std::string::npos;
    for (auto& h : host)
      relative = relative && path.find(h) == std::string::npos;
    if (!relative)
      CAF_ERROR("a host path: " << line);
  }
  (void) s.stop();
}

CAF_TEST_FIXTURE_SCOPE_END()
