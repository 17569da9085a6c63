#define CAF_SUITE libsandbox.session_launcher
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"
#include "helpers/read_to_end.hpp"

// The launcher of a contained session (contain/session_launcher.hpp): its
// commands inherit the session's watch filter (one listener for all, no
// filter of their own), are the node's children, and cannot reach it; a
// launcher that is gone leaves launches to the launching thread, and one
// that ends leaves no process behind.

#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "contain/session_launcher.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/temp_dir.hpp"
#include "sandbox/contain/contained_session.hpp"
#include "sandbox/contain/isolation.hpp"
#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/io/reactor.hpp"
#include "sandbox/process/launcher.hpp"

using sandbox::contained_session;
using sandbox::detail::session_launcher;

namespace {

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// The line of /proc/self/status that starts with `key`, from `text`.
std::string line_of(const std::string& text, const std::string& key) {
  auto at = text.find(key);
  if (at == std::string::npos)
    return {};
  return text.substr(at, text.find('\n', at) - at);
}

struct fixture {
  sandbox::test::temp_dir wd;
  sandbox::test::temp_dir home;
  std::unique_ptr<contained_session> session;
  std::unique_ptr<session_launcher> launcher;

  /// A session and its launcher; false where the host cannot have them.
  bool start() {
    if (!sandbox::test::host_can_contain()
        || !sandbox::host_isolation().syscall_watch)
      return false;
    sandbox::containment_spec spec;
    spec.working_directory = wd.path;
    spec.home_directory = home.path;
    auto s = contained_session::start(spec);
    CAF_REQUIRE(s);
    session = std::move(*s);
    auto l = session_launcher::start(session->init_pidfd(),
                                     sandbox::watch_filter());
    SANDBOX_REQUIRE_OK(l);
    launcher = std::move(*l);
    return true;
  }

  sandbox::launch_spec spec(const std::string& command) {
    sandbox::launch_spec l;
    l.executable = "/bin/sh";
    l.argv = {"sh", "-c", command};
    l.cwd = wd.path;
    l.env = {{"PATH", "/usr/bin:/bin"}};
    l.contain.ns_pidfd = session->init_pidfd();
    l.contain.landlock_ruleset = session->ruleset_fd();
    l.contain.watch_filter = sandbox::watch_filter();
    l.contain.launcher = launcher.get();
    return l;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(session_launcher_tests, fixture)

CAF_TEST(a command inherits the launcher filter and notifies its listener) {
  if (!start())
    return;
  sandbox::unique_fd listener = launcher->take_listener();
  CAF_REQUIRE(listener);
  // A second take has nothing: the session watches one listener.
  CAF_CHECK(!launcher->take_listener());
  auto child = sandbox::launch(
    spec("grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs):' /proc/self/status;"
         " mkdir "
         + wd.path + "/made"));
  SANDBOX_REQUIRE_OK(child);
  // No listener of its own came back: it installed no filter.
  CAF_CHECK(!child->watch_listener);
  // Its mkdir waits on the launcher's listener.
  pollfd ready{listener.get(), POLLIN, 0};
  CAF_REQUIRE_EQUAL(::poll(&ready, 1, 30000), 1);
  seccomp_notif n{};
  CAF_REQUIRE_EQUAL(::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_RECV, &n), 0);
  CAF_CHECK_EQUAL(n.data.nr, SYS_mkdir);
  // The caller is the command, in the command's process group (as the node
  // sees them).
  CAF_CHECK_EQUAL(::getpgid(static_cast<pid_t>(n.pid)), child->pid);
  seccomp_notif_resp resp{};
  resp.id = n.id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  CAF_REQUIRE_EQUAL(::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_SEND, &resp),
                    0);
  auto out = sandbox::test::read_to_end(child->stdout_r.get());
  // The node's child (waitpid reaps it), with exactly one filter: the
  // launcher's.
  CAF_CHECK_EQUAL(wait_for(child->pid), 0);
  CAF_CHECK_EQUAL(line_of(out, "Seccomp:"), "Seccomp:\t2");
  CAF_CHECK_EQUAL(line_of(out, "Seccomp_filters:"), "Seccomp_filters:\t1");
  CAF_CHECK_EQUAL(line_of(out, "NoNewPrivs:"), "NoNewPrivs:\t1");
}

CAF_TEST(nothing of the session can name or stop the launcher) {
  if (!start())
    return;
  auto listener = launcher->take_listener();
  // The launcher's pid means nothing in the session's PID namespace, and
  // a stop of every process the command may signal leaves it running.
  auto pid = std::to_string(launcher->pid());
  auto child = sandbox::launch(spec("test -e /proc/" + pid
                                    + "/status && echo seen; "
                                      "kill -STOP -1 2>/dev/null; echo done"));
  SANDBOX_REQUIRE_OK(child);
  // Every watched call of the command continues unjudged.
  sandbox::reactor r{1};
  sandbox::watch_syscalls(r, std::move(listener),
                          std::make_shared<sandbox::watch_policy>(),
                          [](pid_t, sandbox::violation) {});
  auto out = sandbox::test::read_to_end(child->stdout_r.get());
  wait_for(child->pid);
  CAF_CHECK_EQUAL(out.find("seen"), std::string::npos);
  CAF_CHECK_NOT_EQUAL(out.find("done"), std::string::npos);
  std::ifstream in{"/proc/" + pid + "/status"};
  std::string status{std::istreambuf_iterator<char>(in), {}};
  CAF_CHECK_NOT_EQUAL(status.find("State:\tS"), std::string::npos);
  // And it still launches.
  auto next = sandbox::launch(spec("echo again"));
  SANDBOX_REQUIRE_OK(next);
  CAF_CHECK_EQUAL(sandbox::test::read_to_end(next->stdout_r.get()), "again\n");
  CAF_CHECK_EQUAL(wait_for(next->pid), 0);
}

CAF_TEST(a launcher that is gone leaves launches to the launching thread) {
  if (!start())
    return;
  auto listener = launcher->take_listener();
  auto pid = launcher->pid();
  CAF_REQUIRE_EQUAL(::kill(pid, SIGKILL), 0);
  auto child = sandbox::launch(spec("echo fine"));
  SANDBOX_REQUIRE_OK(child);
  // It installed the filter itself: its own listener came back.
  CAF_CHECK(child->watch_listener);
  CAF_CHECK_EQUAL(sandbox::test::read_to_end(child->stdout_r.get()), "fine\n");
  CAF_CHECK_EQUAL(wait_for(child->pid), 0);
  launcher.reset();
  CAF_CHECK(::kill(pid, 0) != 0 && errno == ESRCH);
}

CAF_TEST(a launcher that ends leaves no process) {
  if (!start())
    return;
  auto pid = launcher->pid();
  CAF_REQUIRE(pid > 0);
  CAF_CHECK_EQUAL(::kill(pid, 0), 0);
  launcher.reset();
  // Reaped, not a zombie: the pid names nothing any more.
  CAF_CHECK(::kill(pid, 0) != 0 && errno == ESRCH);
}

CAF_TEST_FIXTURE_SCOPE_END()
