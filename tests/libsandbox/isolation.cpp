#define CAF_SUITE libsandbox.isolation
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"
#include "helpers/read_to_end.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "contain/session_identity.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/temp_dir.hpp"
#include "io/fd_message.hpp"
#include "sandbox/contain/contained_session.hpp"
#include "sandbox/contain/isolation.hpp"
#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/io/reactor.hpp"
#include "sandbox/process/launcher.hpp"

using sandbox::contained_session;
using sandbox::containment_spec;

using sandbox::test::host_can_contain;

namespace {

struct run_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `command` with /bin/sh in `s` (its namespaces, Landlock, limits).
sandbox::result<run_result> run_in(const contained_session& s,
                                   const std::string& cwd,
                                   const std::string& command) {
  sandbox::launch_spec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", command};
  spec.cwd = cwd;
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.contain.ns_pidfd = s.init_pidfd();
  spec.contain.landlock_ruleset = s.ruleset_fd();
  spec.contain.cpu_seconds = s.limits().cpu_seconds;
  spec.contain.file_size = s.limits().file_size;
  spec.contain.open_files = s.limits().open_files;
  auto child = sandbox::launch(spec);
  if (!child) {
    CAF_MESSAGE("launch failed: " << child.error().message);
    return child.error();
  }
  run_result r;
  r.out = sandbox::test::read_to_end(child->stdout_r.get());
  r.err = sandbox::test::read_to_end(child->stderr_r.get());
  int status = 0;
  while (::waitpid(child->pid, &status, 0) < 0 && errno == EINTR)
    ;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status)
                                  : 128 + WTERMSIG(status);
  return r;
}

struct fixture {
  sandbox::test::temp_dir wd;
  sandbox::test::temp_dir home;
  sandbox::test::temp_dir outside;

  containment_spec spec() const {
    containment_spec s;
    s.working_directory = wd.path;
    s.home_directory = home.path;
    return s;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(isolation_tests, fixture)

CAF_TEST(the probe names what is missing or nothing) {
  auto& host = sandbox::host_isolation();
  auto missing = host.missing();
  CAF_CHECK_EQUAL(missing.empty(),
                  host.namespaces
                    && host.landlock_abi >= sandbox::min_landlock_abi);
  // The probe is made once: the same object every time.
  CAF_CHECK_EQUAL(&host, &sandbox::host_isolation());
  sandbox::isolation_limits wants_pids;
  wants_pids.processes = 10;
  if (!host.has_controller("pids"))
    CAF_CHECK(host.missing(wants_pids).find("pids controller")
              != std::string::npos);
}

CAF_TEST(isolation modes parse and print) {
  auto none = sandbox::parse_isolation("none");
  auto contained = sandbox::parse_isolation("contained");
  CAF_REQUIRE(none && contained);
  CAF_CHECK(*none == sandbox::isolation_mode::none);
  CAF_CHECK(*contained == sandbox::isolation_mode::contained);
  auto bad = sandbox::parse_isolation("jail");
  CAF_REQUIRE(!bad);
  CAF_CHECK(bad.error().message.find("jail") != std::string::npos);
  CAF_CHECK_EQUAL(sandbox::to_string(sandbox::isolation_mode::contained),
                  "contained");
}

CAF_TEST(a command runs in the session namespaces) {
  if (!host_can_contain())
    return;
  auto s = contained_session::start(spec());
  CAF_REQUIRE(s);
  // echo and the glob are the shell's own: no other process exists.
  auto r = run_in(**s, wd.path, "echo $$; hostname; echo /proc/[0-9]*");
  CAF_REQUIRE(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  // PID 1 is the init, the shell is the next process of the namespace,
  // and /proc lists those two only.
  CAF_CHECK_EQUAL(r->out, "2\nsandbox\n/proc/1 /proc/2\n");
}

CAF_TEST(both launch paths put the command in every namespace of the session) {
  if (!host_can_contain())
    return;
  // A root node clones the command straight into the session's PID
  // namespace; an unprivileged one goes through an entering child. Both
  // must give the command the init's namespaces, the PID 2 of a fresh
  // session and Landlock, and leave the launching thread where it was.
  auto own_ns = [](const std::string& link) {
    char buf[64] = {};
    auto n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string{};
  };
  for (bool entering : {false, true}) {
    CAF_MESSAGE("entering child: " << entering);
    sandbox::force_entering_child(entering);
    auto s = contained_session::start(spec());
    CAF_REQUIRE(s);
    std::string expected = "2\n";
    for (const char* ns : {"user", "mnt", "ipc", "uts", "net", "pid", "cgroup"})
      expected
        += own_ns("/proc/" + std::to_string((*s)->init_pid()) + "/ns/" + ns)
           + "\n";
    auto r = run_in(**s, wd.path,
                    "echo $$; for n in user mnt ipc uts net pid cgroup; do "
                    "readlink /proc/self/ns/$n; done; "
                    "echo x > "
                      + outside.path + "/escaped");
    sandbox::force_entering_child(false);
    CAF_REQUIRE(r);
    CAF_CHECK_EQUAL(r->out, expected);
    CAF_CHECK_NOT_EQUAL(r->exit_code, 0);
    struct stat st;
    CAF_CHECK_NOT_EQUAL(::stat(outside.at("escaped").c_str(), &st), 0);
    CAF_CHECK_EQUAL(own_ns("/proc/thread-self/ns/pid_for_children"),
                    own_ns("/proc/self/ns/pid"));
  }
}

CAF_TEST(a session socket pair gives each launch its own listener) {
  if (!host_can_contain() || !sandbox::host_isolation().syscall_watch)
    return;
  auto s = contained_session::start(spec());
  CAF_REQUIRE(s);
  int pair[2];
  CAF_REQUIRE_EQUAL(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair),
                    0);
  sandbox::unique_fd ours{pair[0]};
  sandbox::unique_fd theirs{pair[1]};
  sandbox::unique_fd node{
    static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0))};
  CAF_REQUIRE(node);
  // What a failed launch would leave: a message with a descriptor, here
  // the only write end of a pipe, so that its closing shows as the end of
  // the pipe.
  int p[2];
  CAF_REQUIRE_EQUAL(::pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
  sandbox::unique_fd stale_read{p[0]};
  {
    uint64_t tag = 0;
    sandbox::fd_message m{&tag, sizeof tag};
    *m.attach() = p[1];
    CAF_REQUIRE_EQUAL(::sendmsg(theirs.get(), &m.msg, 0),
                      static_cast<ssize_t>(sizeof tag));
    ::close(p[1]);
  }
  auto notify_fd = [](int fd) {
    char buf[64] = {};
    auto link = "/proc/self/fd/" + std::to_string(fd);
    auto n = ::readlink(link.c_str(), buf, sizeof(buf) - 1);
    return n > 0
           && std::string(buf, static_cast<size_t>(n))
                == "anon_inode:seccomp notify";
  };
  for (bool entering : {false, true}) {
    CAF_MESSAGE("entering child: " << entering);
    sandbox::force_entering_child(entering);
    sandbox::launch_spec l;
    l.executable = "/bin/sh";
    l.argv = {"sh", "-c", "exit 0"};
    l.cwd = wd.path;
    l.env = {{"PATH", "/usr/bin:/bin"}};
    l.contain.ns_pidfd = (*s)->init_pidfd();
    l.contain.landlock_ruleset = (*s)->ruleset_fd();
    l.contain.watch_filter = sandbox::watch_filter();
    l.contain.report_pair[0] = ours.get();
    l.contain.report_pair[1] = theirs.get();
    l.contain.node_pidfd = node.get();
    auto child = sandbox::launch(l);
    sandbox::force_entering_child(false);
    SANDBOX_REQUIRE_OK(child);
    CAF_CHECK(notify_fd(child->watch_listener.get()));
    // Nothing is left in the pair for the next launch.
    char byte;
    CAF_CHECK_EQUAL(::recv(ours.get(), &byte, 1, MSG_DONTWAIT), -1);
    child->watch_listener.reset();
    int status = 0;
    while (::waitpid(child->pid, &status, 0) < 0 && errno == EINTR)
      ;
    CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  // The stale message's descriptor was closed by the first launch.
  char byte;
  CAF_CHECK_EQUAL(::read(stale_read.get(), &byte, 1), 0);
}

CAF_TEST(a command writes its directories and nothing else) {
  if (!host_can_contain())
    return;
  auto s = contained_session::start(spec());
  CAF_REQUIRE(s);
  auto r = run_in(**s, wd.path,
                  "echo a > in-wd && echo b > " + home.path
                    + "/in-home && echo c > "
                      "/tmp/private && cat /tmp/private && echo d > /dev/null");
  CAF_REQUIRE(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  CAF_CHECK_EQUAL(r->err, "");
  struct stat st;
  CAF_CHECK_EQUAL(::stat(wd.at("in-wd").c_str(), &st), 0);
  auto out = run_in(**s, wd.path, "echo x > " + outside.path + "/escaped");
  CAF_REQUIRE(out);
  CAF_CHECK_NOT_EQUAL(out->exit_code, 0);
  CAF_CHECK_NOT_EQUAL(::stat(outside.at("escaped").c_str(), &st), 0);
}

CAF_TEST(a denied path reads as empty) {
  if (!host_can_contain())
    return;
  {
    std::ofstream secret{outside.at("key.pem")};
    secret << "SECRET";
  }
  auto sp = spec();
  sp.deny = {outside.at("key.pem")};
  auto s = contained_session::start(sp);
  CAF_REQUIRE(s);
  auto r = run_in(**s, wd.path, "cat " + outside.at("key.pem"));
  CAF_REQUIRE(r);
  CAF_CHECK_EQUAL(r->out, "");
}

CAF_TEST(killing the init ends every process of the session) {
  if (!host_can_contain())
    return;
  auto s = contained_session::start(spec());
  CAF_REQUIRE(s);
  auto pid = (*s)->init_pid();
  CAF_CHECK_EQUAL(::kill(pid, 0), 0);
  s->reset();
  CAF_CHECK_NOT_EQUAL(::kill(pid, 0), 0);
}

// actors.embedding.contained once found a zombie init after its node had
// gone: the reap waited on the reactor, and the reactor was destroyed
// before the wait ran.
CAF_TEST(an init reaped on a reactor that ends first is reaped anyway) {
  if (!host_can_contain())
    return;
  pid_t pid = 0;
  {
    // A reactor without threads: the wait is queued and never runs.
    sandbox::reactor r{0};
    auto s = contained_session::start(spec());
    CAF_REQUIRE(s);
    pid = (*s)->init_pid();
    (*s)->reap_on(r);
    s->reset();
  }
  siginfo_t info{};
  CAF_CHECK_EQUAL(
    ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG), -1);
  CAF_CHECK_EQUAL(errno, ECHILD);
}

CAF_TEST(a session id another node holds is not handed out) {
  using sandbox::detail::id_lease;
  // Another node: a lock of its own on the machine's id file.
  int other = ::open("/run/sandbox-session-ids.lock",
                     O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (other < 0) {
    CAF_MESSAGE("skipped: /run/sandbox-session-ids.lock cannot be opened "
                "(the node's ids are then its own only)");
    return;
  }
  auto lock = [other](uint32_t id, short type) {
    struct flock l {};
    l.l_type = type;
    l.l_whence = SEEK_SET;
    l.l_start = static_cast<off_t>(id);
    l.l_len = 1;
    return ::fcntl(other, F_OFD_SETLK, &l) == 0;
  };
  // Ids far above any default range, apart per test process.
  uint32_t base = 0xf0000000u + static_cast<uint32_t>(::getpid()) % 0x1000000u;
  CAF_REQUIRE(lock(base, F_WRLCK));
  auto none = id_lease::take(base, 1);
  CAF_REQUIRE(!none);
  CAF_CHECK(none.error().code == sandbox::errc::unsupported);
  CAF_CHECK(none.error().message.find("in use") != std::string::npos);
  // The next one of a wider range is free.
  auto next = id_lease::take(base, 2);
  SANDBOX_REQUIRE_OK(next);
  CAF_CHECK_EQUAL((*next)->id(), base + 1);
  // Now the other node holds nothing it may take but base + 1 is ours.
  CAF_CHECK(!lock(base + 1, F_WRLCK));
  CAF_REQUIRE(lock(base, F_UNLCK));
  auto first = id_lease::take(base, 1);
  SANDBOX_REQUIRE_OK(first);
  CAF_CHECK_EQUAL((*first)->id(), base);
  // A lease's end lets the id go.
  next->reset();
  first->reset();
  CAF_CHECK(lock(base, F_WRLCK));
  CAF_CHECK(lock(base + 1, F_WRLCK));
  ::close(other);
}

CAF_TEST_FIXTURE_SCOPE_END()
