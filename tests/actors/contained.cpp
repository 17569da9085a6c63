#define CAF_SUITE actors.contained
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Escape tests of contained sessions (docs/security.md): each attempt must
// fail from inside. Skipped, with the reason, only where the host cannot
// give contained sessions at all.

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "contained_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/foreign_abi.hpp"
#include "helpers/violations.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::exec_options;
using sandbox::isolation_mode;
using sandbox::actors::blocking_session;
using sandbox::actors::session_config;

extern char** environ;

using sandbox::test::has_detail_prefix;
using sandbox::test::has_violation_in;
using sandbox::test::host_can_contain;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, {}};
}

/// A helper process of the test itself (outside every session): `sleep`,
/// ended and reaped by the destructor.
struct host_helper {
  pid_t pid = -1;
  host_helper() {
    const char* argv[] = {"sleep", "300", nullptr};
    // Not on the test's output: if the test program dies without this
    // destructor, ctest does not wait for the helper to let go of its pipe.
    posix_spawn_file_actions_t io;
    ::posix_spawn_file_actions_init(&io);
    for (int fd : {0, 1, 2})
      ::posix_spawn_file_actions_addopen(&io, fd, "/dev/null", O_RDWR, 0);
    auto rc = ::posix_spawn(&pid, "/bin/sleep", &io, nullptr,
                            const_cast<char* const*>(argv), environ);
    ::posix_spawn_file_actions_destroy(&io);
    if (rc != 0)
      throw std::runtime_error("posix_spawn sleep");
  }
  bool alive() const {
    int status = 0;
    return ::waitpid(pid, &status, WNOHANG) == 0;
  }
  ~host_helper() {
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};

struct fixture : sandbox::test::contained_fixture {
  std::string key;

  fixture() {
    key = out.path + "/node-key.pem";
    std::ofstream{key} << "SECRET-KEY";
    // Outside /tmp: the base directory is then mounted over in each
    // session, not just left behind in the host's /tmp.
    ::mkdir((out.path + "/base").c_str(), 0755);
    ::mkdir((out.path + "/outside").c_str(), 0755);
    auto cfg = sandbox::test::contained_config();
    cfg.isolation_deny = {key};
    sandbox::actors::node_config ncfg;
    ncfg.base_directory = out.path + "/base";
    start(cfg, ncfg);
    // Sessions in a new directory under the base directory, that may see
    // `out` but not change it (outside their view else).
    work.clear();
    readable = {out.path};
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(contained_tests, fixture)

CAF_TEST(an honest command sees its directories and its results) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(info->isolation == isolation_mode::contained);
  auto r = run(s, "pwd; echo hi > f && cat f; echo \"$HOME\"; "
                  "echo t > /tmp/t && cat /tmp/t; exit 3");
  CAF_CHECK_EQUAL(r.exit_code, 3);
  CAF_CHECK_EQUAL(r.stdout_data,
                  info->working_directory + "\nhi\n" + dir.path + "/home\nt\n");
  CAF_CHECK(exists(info->working_directory + "/f"));
  CAF_CHECK(r.violations.empty());
  CAF_CHECK(r.ended_by == sandbox::violation_kind::none);
  // The private /tmp is not the host's.
  CAF_CHECK(!exists("/tmp/t") || slurp("/tmp/t") != "t\n");
  // Nothing of the session runs any more: the stop ends and kills nothing
  // (the init, which ignores SIGTERM, is not waited for through the grace).
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_EQUAL(receipt->ended, 0u);
  CAF_CHECK_EQUAL(receipt->killed, 0u);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
}

CAF_TEST(a write outside the allowed directories fails) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto target = out.path + "/outside/escaped";
  auto r = run(s, "echo x > " + target);
  CAF_CHECK_NOT_EQUAL(r.exit_code, 0);
  CAF_CHECK(!exists(target));
  // Reported, typed, with the path and the execution.
  CAF_CHECK(
    has_violation_in(r.violations, sandbox::violation_kind::write_denied, 1));
  CAF_CHECK(has_detail_prefix(r.violations,
                              sandbox::violation_kind::write_denied, target));
  auto m = run(s, "mkdir " + out.path + "/outside/d");
  CAF_CHECK_NOT_EQUAL(m.exit_code, 0);
  CAF_CHECK(!exists(out.path + "/outside/d"));
  CAF_CHECK(has_detail_prefix(m.violations,
                              sandbox::violation_kind::write_denied,
                              out.path + "/outside/d"));
  // An existing directory outside is no violation (mkdir -p walks it).
  auto p = run(s, "mkdir -p " + dir.path + "/home/sub");
  CAF_CHECK_EQUAL(p.exit_code, 0);
  CAF_CHECK(p.violations.empty());
  // The key, denied and outside the allowed directories, stays.
  auto rm = run(s, "rm -f " + key);
  CAF_CHECK_EQUAL(slurp(key), "SECRET-KEY");
  CAF_CHECK(has_detail_prefix(rm.violations,
                              sandbox::violation_kind::write_denied, key));
  auto seen = s.violations();
  SANDBOX_REQUIRE_OK(seen);
  CAF_CHECK(has_violation_in(*seen, sandbox::violation_kind::write_denied, 1));
  CAF_CHECK(has_violation_in(*seen, sandbox::violation_kind::write_denied, 4));
  // Through a symbolic link made inside: refused, and reported with where
  // the link led (a link to a file, then one to a directory).
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  auto wd = info->working_directory;
  auto via = out.path + "/outside/via-link";
  auto l = run(s, "ln -s " + via + " link && echo x > link");
  CAF_CHECK_NOT_EQUAL(l.exit_code, 0);
  CAF_CHECK(!exists(via));
  CAF_CHECK(has_detail_prefix(l.violations,
                              sandbox::violation_kind::write_denied,
                              wd + "/link (-> " + via + ")"));
  auto d = run(s, "ln -s " + out.path + "/outside dlink && echo x > dlink/f");
  CAF_CHECK_NOT_EQUAL(d.exit_code, 0);
  CAF_CHECK(!exists(out.path + "/outside/f"));
  CAF_CHECK(has_detail_prefix(d.violations,
                              sandbox::violation_kind::write_denied,
                              wd + "/dlink/f (-> " + out.path + "/outside/f)"));
  // A link that stays inside is no violation.
  auto in = run(s, "mkdir -p sub && ln -s sub slink && echo x > slink/f && "
                   "cat sub/f");
  CAF_CHECK_EQUAL(in.exit_code, 0);
  CAF_CHECK(in.violations.empty());
  (void) s.stop();
}

CAF_TEST(a write outside through another ABI fails and is reported) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto child = std::string{sandbox::test::test_child()};
  // x32: the filter sees the call on any x86-64 kernel; one without the
  // x32 ABI then fails it with ENOSYS, one with it through Landlock.
  auto x32 = out.path + "/outside/x32";
  auto rx = run(s, child + " write-abi x32 " + x32);
  CAF_CHECK_EQUAL(rx.exit_code, 1);
  CAF_CHECK(!exists(x32));
  CAF_CHECK(
    has_violation_in(rx.violations, sandbox::violation_kind::write_denied, 1));
  CAF_CHECK(has_detail_prefix(rx.violations,
                              sandbox::violation_kind::write_denied, x32));
  // i386 (int $0x80), as a 32-bit program writes.
  if (!sandbox::test::kernel_runs_i386()) {
    CAF_MESSAGE("skipped the i386 write: this kernel does not run i386 "
                "system calls (no IA32 emulation, or ia32_emulation=0)");
  } else {
    auto target = out.path + "/outside/i386";
    auto r = run(s, child + " write-abi i386 " + target);
    CAF_CHECK_EQUAL(r.exit_code, 1);
    CAF_CHECK(!exists(target));
    CAF_CHECK(
      has_violation_in(r.violations, sandbox::violation_kind::write_denied, 2));
    CAF_CHECK(has_detail_prefix(r.violations,
                                sandbox::violation_kind::write_denied, target));
  }
  (void) s.stop();
}

CAF_TEST(a denied path cannot be read) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto r = run(s, "cat " + key);
  CAF_CHECK(r.stdout_data.find("SECRET") == std::string::npos);
  if (!sandbox::host_isolation().read_watch) {
    CAF_MESSAGE("the read is not reported on this host (no fanotify "
                "permission events)");
    (void) s.stop();
    return;
  }
  // Refused and reported, tagged with the execution; a process the
  // command started (its group) is the command's too.
  CAF_CHECK_NOT_EQUAL(r.exit_code, 0);
  CAF_CHECK(
    has_violation_in(r.violations, sandbox::violation_kind::read_denied, 1));
  CAF_CHECK(
    has_detail_prefix(r.violations, sandbox::violation_kind::read_denied, key));
  auto sub = run(s, "(cat " + key + "; true) | cat");
  CAF_CHECK(sub.stdout_data.find("SECRET") == std::string::npos);
  CAF_CHECK(
    has_violation_in(sub.violations, sandbox::violation_kind::read_denied, 2));
  // Honest reads of the system still work, unreported.
  auto honest = run(s, "cat /etc/hostname /proc/self/status > /dev/null");
  CAF_CHECK_EQUAL(honest.exit_code, 0);
  CAF_CHECK(honest.violations.empty());
  auto seen = s.violations();
  SANDBOX_REQUIRE_OK(seen);
  CAF_CHECK(has_violation_in(*seen, sandbox::violation_kind::read_denied, 1));
  CAF_CHECK(has_violation_in(*seen, sandbox::violation_kind::read_denied, 2));
  (void) s.stop();
}

CAF_TEST(a read at the very start is on its own execution result) {
  if (!host_can_contain() || !sandbox::host_isolation().read_watch)
    return;
  // The command reads at once, maybe before the node has its process
  // actor: the report still reaches that execution's result, never the
  // session's (execution 0) or another execution's.
  auto s = make_session();
  constexpr uint64_t rounds = 30;
  for (uint64_t exec = 1; exec <= rounds; ++exec) {
    auto r = run(s, "exec cat " + key);
    size_t reads = 0;
    for (auto& v : r.violations)
      if (v.kind == sandbox::violation_kind::read_denied) {
        ++reads;
        CAF_CHECK_EQUAL(v.execution, exec);
      }
    CAF_CHECK_EQUAL(reads, 1u);
  }
  auto seen = s.violations();
  SANDBOX_REQUIRE_OK(seen);
  for (auto& v : *seen)
    CAF_CHECK_NOT_EQUAL(v.execution, 0u);
  (void) s.stop();
}

CAF_TEST(the files of another session cannot be reached) {
  if (!host_can_contain())
    return;
  auto a = make_session();
  auto b = make_session();
  auto a_info = a.info();
  SANDBOX_REQUIRE_OK(a_info);
  CAF_REQUIRE_EQUAL(run(a, "echo private-a > mine").exit_code, 0);
  auto r = run(b, "cat " + a_info->working_directory + "/mine; ls " + out.path
                    + "/base");
  CAF_CHECK(r.stdout_data.find("private-a") == std::string::npos);
  CAF_CHECK(r.stdout_data.find(a_info->id) == std::string::npos);
  // Listing the base directory is a refused read of it; so is a path below
  // it that is not the session's own, where the node serves FUSE (else
  // that path is simply not there).
  if (sandbox::host_isolation().read_watch)
    CAF_CHECK(has_detail_prefix(
      r.violations, sandbox::violation_kind::read_denied, out.path + "/base"));
  if (sandbox::host_isolation().lookup_watch) {
    auto target = a_info->working_directory + "/mine";
    size_t below = 0;
    for (auto& v : r.violations)
      if (v.kind == sandbox::violation_kind::read_denied
          && v.detail.size() > out.path.size() + 5
          && target.compare(0, v.detail.size(), v.detail) == 0)
        ++below;
    CAF_CHECK_EQUAL(below, 1u);
  }
  // The session's own directory, inside the denied one, is its own.
  auto own = run(b, "echo mine > own && cat own && ls");
  CAF_CHECK_EQUAL(own.exit_code, 0);
  CAF_CHECK_EQUAL(own.stdout_data, "mine\nown\n");
  CAF_CHECK(own.violations.empty());
  auto w = run(b, "echo x > " + a_info->working_directory + "/planted");
  CAF_CHECK_NOT_EQUAL(w.exit_code, 0);
  CAF_CHECK(!exists(a_info->working_directory + "/planted"));
  (void) a.stop();
  (void) b.stop();
}

CAF_TEST(proc lists the session processes only) {
  if (!host_can_contain())
    return;
  host_helper helper;
  auto s = make_session();
  auto r = run(s, "echo $$; test -e /proc/" + std::to_string(helper.pid)
                    + " && echo visible; ls /proc | grep -c '^[0-9]'");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK(r.stdout_data.find("visible") == std::string::npos);
  // The init, the shell, ls and grep at most.
  auto lines = r.stdout_data;
  auto count = std::stoi(lines.substr(lines.rfind('\n', lines.size() - 2) + 1));
  CAF_CHECK_LESS_OR_EQUAL(count, 4);
  (void) s.stop();
}

CAF_TEST(a host process cannot be signalled or traced and is reported) {
  if (!host_can_contain())
    return;
  host_helper helper;
  auto s = make_session();
  auto pid = std::to_string(helper.pid);
  auto r = run(s, "kill -KILL " + pid);
  CAF_CHECK_NOT_EQUAL(r.exit_code, 0);
  CAF_CHECK(helper.alive());
  CAF_CHECK(has_detail_prefix(
    r.violations, sandbox::violation_kind::signal_denied, "kill " + pid));
  CAF_CHECK(
    has_violation_in(r.violations, sandbox::violation_kind::signal_denied, 1));
  auto t = run(s, std::string{sandbox::test::test_child()} + " ptrace " + pid);
  CAF_CHECK_EQUAL(t.exit_code, 1);
  CAF_CHECK_EQUAL(t.stdout_data, "No such process\n");
  CAF_CHECK(helper.alive());
  CAF_CHECK(has_detail_prefix(
    t.violations, sandbox::violation_kind::signal_denied, "ptrace " + pid));
  // The session's own processes: signalled and traced, nothing reported.
  auto own = run(s, "sleep 30 & p=$!; "
                      + std::string{sandbox::test::test_child()}
                      + " ptrace $p; kill $p; wait $p; echo $?");
  CAF_CHECK_EQUAL(own.stdout_data, "attached\n143\n");
  CAF_CHECK(own.violations.empty());
  (void) s.stop();
}

CAF_TEST(the network is loopback only) {
  if (!host_can_contain())
    return;
  // A listener of the test on the host's loopback.
  int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  CAF_REQUIRE_EQUAL(::bind(l, reinterpret_cast<sockaddr*>(&addr), len), 0);
  CAF_REQUIRE_EQUAL(::listen(l, 1), 0);
  CAF_REQUIRE_EQUAL(::getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len),
                    0);
  auto port = ntohs(addr.sin_port);
  auto s = make_session();
  auto out = run(s, std::string{sandbox::test::test_child()} + " connect "
                      + std::to_string(port));
  CAF_CHECK_NOT_EQUAL(out.exit_code, 0);
  CAF_CHECK_EQUAL(out.stdout_data, "ECONNREFUSED\n");
  CAF_CHECK(has_detail_prefix(out.violations,
                              sandbox::violation_kind::connect_denied,
                              "127.0.0.1:" + std::to_string(port)));
  auto own = run(s, std::string{sandbox::test::test_child()} + " connect 0");
  CAF_CHECK_EQUAL(own.exit_code, 0);
  CAF_CHECK_EQUAL(own.stdout_data, "connected\n");
  CAF_CHECK(own.violations.empty());
  ::close(l);
  (void) s.stop();
}

CAF_TEST(nothing of the session survives its stop) {
  if (!host_can_contain())
    return;
  std::random_device rd;
  auto token = "300." + std::to_string(rd() % 900000 + 100000);
  auto s = make_session();
  // The command ends once the escaper runs `sleep` (its command line holds
  // the token, which the command's own text does not spell out), so the
  // scan below finds it. setsid and env hold the token too, and while one
  // of them executes the next its command line reads empty: the wait is
  // for the last program, with its arguments in place.
  auto dot = token.find('.');
  auto r = run(s, "t=" + token.substr(0, dot + 1) + "; t=${t}"
                    + token.substr(dot + 1)
                    + "; setsid env -i sleep $t > /dev/null 2>&1 & p=$!; "
                      "until [ \"$(cat /proc/$p/comm 2>/dev/null)\" = sleep ]"
                      " && grep -q $t /proc/$p/cmdline 2>/dev/null; "
                      "do :; done");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  // The escaper, as the host sees it.
  std::vector<int> pidfds;
  for (auto& e : sandbox::proc_snapshot()) {
    if (e.zombie())
      continue;
    auto cmdline = slurp("/proc/" + std::to_string(e.pid) + "/cmdline");
    if (cmdline.find(token) != std::string::npos)
      pidfds.push_back(static_cast<int>(::syscall(SYS_pidfd_open, e.pid, 0)));
  }
  CAF_REQUIRE_EQUAL(pidfds.size(), 1u);
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
  // Its exit is an event (the pidfd becomes readable); the bound only keeps
  // a broken build from hanging.
  pollfd p{pidfds[0], POLLIN, 0};
  CAF_CHECK_EQUAL(::poll(&p, 1, 10000), 1);
  ::close(pidfds[0]);
}

CAF_TEST(a session has one launcher that holds its filter and ends with it) {
  if (!host_can_contain() || !sandbox::host_isolation().syscall_watch)
    return;
  // The node's children that hold a seccomp filter and run no program of
  // their own (their command line is the node's): launchers.
  auto launchers = [] {
    std::vector<pid_t> out;
    auto own = slurp("/proc/self/cmdline");
    for (auto& e : sandbox::proc_snapshot()) {
      if (e.ppid != ::getpid() || e.zombie())
        continue;
      auto at = "/proc/" + std::to_string(e.pid);
      if (slurp(at + "/status").find("Seccomp:\t2") != std::string::npos
          && slurp(at + "/cmdline") == own)
        out.push_back(e.pid);
    }
    return out;
  };
  auto before = launchers().size();
  auto s = make_session();
  std::string filters;
  for (int i = 0; i < 3; ++i) {
    auto r = run(s, "grep Seccomp_filters /proc/self/status");
    CAF_CHECK_EQUAL(r.exit_code, 0);
    filters += r.stdout_data;
  }
  // Every command runs under the one filter it inherited.
  CAF_CHECK_EQUAL(filters, "Seccomp_filters:\t1\nSeccomp_filters:\t1\n"
                           "Seccomp_filters:\t1\n");
  CAF_CHECK_EQUAL(launchers().size(), before + 1);
  SANDBOX_REQUIRE_OK(s.stop());
  CAF_CHECK_EQUAL(launchers().size(), before);
}

CAF_TEST(a fork bomb is bounded by the process limit and reported) {
  if (!host_can_contain())
    return;
  if (!sandbox::host_isolation().has_controller("pids")) {
    CAF_MESSAGE("skipped: no cgroup pids controller (v2 or v1) is "
                "available to the node's cgroups here");
    return;
  }
  session_config cfg;
  cfg.home_directory = dir.path + "/home";
  cfg.limits = sandbox::isolation_limits{};
  cfg.limits->processes = 32;
  auto s = blocking_session::create(*node, cfg);
  SANDBOX_REQUIRE_OK(s);
  auto honest = run(*s, "true");
  CAF_CHECK(honest.violations.empty());
  // Under the sanitizers the helper's leak check at exit would need a
  // thread the process limit refuses.
  auto r = run(*s, "ASAN_OPTIONS=detect_leaks=0 "
                     + std::string{sandbox::test::test_child()} + " fork-bomb");
  CAF_CHECK_EQUAL(r.stdout_data.substr(0, 13), "bounded after");
  CAF_CHECK(
    has_violation_in(r.violations, sandbox::violation_kind::process_limit, 2));
  auto seen = s->violations();
  SANDBOX_REQUIRE_OK(seen);
  CAF_CHECK(has_violation_in(*seen, sandbox::violation_kind::process_limit, 2));
  // The node and the session stay responsive.
  CAF_CHECK_EQUAL(run(*s, "echo ok").stdout_data, "ok\n");
  auto receipt = s->stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
}

CAF_TEST(a memory hog is ended by the memory limit and the result says so) {
  if (!host_can_contain())
    return;
  if (!sandbox::host_isolation().has_controller("memory")) {
    CAF_MESSAGE("skipped: no cgroup memory controller (v2 or v1) is "
                "available to the node's cgroups here");
    return;
  }
  session_config cfg;
  cfg.home_directory = dir.path + "/home";
  // Room for a sanitizer runtime's own memory.
  cfg.limits = sandbox::isolation_limits{};
  cfg.limits->memory = 256 << 20;
  auto s = blocking_session::create(*node, cfg);
  SANDBOX_REQUIRE_OK(s);
  auto child = std::string{sandbox::test::test_child()};
  auto small = run(*s,
                   "ASAN_OPTIONS=detect_leaks=0 exec " + child + " alloc 16");
  CAF_CHECK_EQUAL(small.stdout_data, "allocated\n");
  CAF_CHECK(small.ended_by == sandbox::violation_kind::none);
  auto r = run(*s, "ASAN_OPTIONS=detect_leaks=0 exec " + child + " alloc 1024");
  CAF_CHECK_EQUAL(r.exit_code, 128 + SIGKILL);
  CAF_CHECK(r.ended_by == sandbox::violation_kind::memory_limit);
  CAF_CHECK(
    has_violation_in(r.violations, sandbox::violation_kind::memory_limit, 2));
  CAF_CHECK_EQUAL(run(*s, "echo ok").stdout_data, "ok\n");
  auto receipt = s->stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
}

CAF_TEST(cpu time and file size limits end a command and are named) {
  if (!host_can_contain())
    return;
  session_config cfg;
  cfg.home_directory = dir.path + "/home";
  cfg.limits = sandbox::isolation_limits{};
  cfg.limits->cpu_seconds = 1;
  cfg.limits->file_size = 1 << 20;
  auto s = blocking_session::create(*node, cfg);
  SANDBOX_REQUIRE_OK(s);
  auto cpu = run(*s,
                 "exec " + std::string{sandbox::test::test_child()} + " spin");
  CAF_CHECK_EQUAL(cpu.exit_code, 128 + SIGXCPU);
  CAF_CHECK(cpu.ended_by == sandbox::violation_kind::cpu_limit);
  CAF_CHECK(
    has_violation_in(cpu.violations, sandbox::violation_kind::cpu_limit, 1));
  auto big = run(*s, "exec head -c 2000000 /dev/zero > big");
  CAF_CHECK_EQUAL(big.exit_code, 128 + SIGXFSZ);
  CAF_CHECK(big.ended_by == sandbox::violation_kind::file_size_limit);
  auto seen = s->violations();
  SANDBOX_REQUIRE_OK(seen);
  CAF_CHECK(has_violation_in(*seen, sandbox::violation_kind::cpu_limit, 1));
  CAF_CHECK(
    has_violation_in(*seen, sandbox::violation_kind::file_size_limit, 2));
  (void) s->stop();
}

CAF_TEST(a session without limits gets the node default limits) {
  if (!host_can_contain())
    return;
  if (!sandbox::host_isolation().has_controller("pids")) {
    CAF_MESSAGE("skipped: no cgroup pids controller");
    return;
  }
  // What `serve --pids 32` gives its node.
  auto rcfg = sandbox::test::node_fixture::config();
  rcfg.isolation = isolation_mode::contained;
  rcfg.limits.processes = 32;
  sandbox::actors::node_config ncfg;
  ncfg.base_directory = out.path + "/base";
  sandbox::actors::embedded_node limited{rcfg, ncfg};
  session_config cfg;
  cfg.home_directory = dir.path + "/home";
  auto s = blocking_session::create(limited, cfg);
  SANDBOX_REQUIRE_OK(s);
  auto r = run(*s, "ASAN_OPTIONS=detect_leaks=0 "
                     + std::string{sandbox::test::test_child()} + " fork-bomb");
  CAF_CHECK_EQUAL(r.stdout_data.substr(0, 13), "bounded after");
  // The session's first execution.
  CAF_CHECK(
    has_violation_in(r.violations, sandbox::violation_kind::process_limit, 1));
  auto receipt = s->stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
}

CAF_TEST(a node limits contained sessions by default) {
  auto limits = sandbox::actors::runtime_config{}.limits;
  CAF_CHECK_EQUAL(limits.memory, uint64_t{2} << 30);
  CAF_CHECK_EQUAL(limits.processes, 512u);
  CAF_CHECK_EQUAL(limits.tmp_size, uint64_t{1} << 30);
  CAF_CHECK_EQUAL(limits.max_connections, 256u);
}

CAF_TEST(a limit the host cannot give is refused and named) {
  if (!host_can_contain())
    return;
  if (sandbox::host_isolation().has_controller("pids"))
    return;
  session_config cfg;
  cfg.limits = sandbox::isolation_limits{};
  cfg.limits->processes = 32;
  auto s = blocking_session::create(*node, cfg);
  CAF_REQUIRE(!s);
  CAF_CHECK(s.error().code == sandbox::errc::unsupported);
  CAF_CHECK(s.error().message.find("pids controller") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
