#define CAF_SUITE libsandbox.watchdog
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The process-wide watchdog seen from the node that leases it. Its work
// when the node dies is covered by actors.node_death (the node must be a
// process of its own there).

#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <string>

#include "sandbox/process/process_tree.hpp"
#include "sandbox/process/watchdog.hpp"

using sandbox::watchdog;

namespace {

/// The descriptors of `pid` and what they point to.
std::map<int, std::string> descriptors(pid_t pid) {
  std::map<int, std::string> out;
  auto dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr)
    return out;
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] == '.')
      continue;
    char target[PATH_MAX];
    auto n = ::readlink((dir + "/" + e->d_name).c_str(), target,
                        sizeof(target));
    out[std::stoi(e->d_name)] = n > 0 ? std::string(target, n) : "?";
  }
  ::closedir(d);
  return out;
}

std::optional<sandbox::proc_entry> entry(pid_t pid) {
  for (auto& e : sandbox::proc_snapshot())
    if (e.pid == pid)
      return e;
  return std::nullopt;
}

/// Waits (10 s at most) until `pidfd`'s process has ended.
bool exits(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, 10000) == 1;
}

} // namespace

CAF_TEST(one watchdog per process in a session of its own and not a child) {
  CAF_REQUIRE_EQUAL(watchdog::pid(), 0);
  pid_t first = 0;
  {
    watchdog::lease a;
    first = watchdog::pid();
    CAF_REQUIRE_GREATER(first, 0);
    {
      watchdog::lease b;
      CAF_CHECK_EQUAL(watchdog::pid(), first); // shared, not a second one
    }
    CAF_CHECK_EQUAL(watchdog::pid(), first); // still leased by `a`
    auto e = entry(first);
    CAF_REQUIRE(e.has_value());
    CAF_CHECK_NOT_EQUAL(e->ppid, ::getpid());
    CAF_CHECK_NOT_EQUAL(::getsid(first), ::getsid(0));
    CAF_CHECK_NOT_EQUAL(e->pgid, ::getpgid(0));
    // Only its end of the socket pair, and /dev/null as 0, 1 and 2.
    auto fds = descriptors(first);
    CAF_CHECK_EQUAL(fds.size(), 4u);
    for (int fd : {0, 1, 2})
      CAF_CHECK_EQUAL(fds[fd], "/dev/null");
    CAF_CHECK_EQUAL(fds[3].rfind("socket:", 0), 0u);
  }
  CAF_CHECK_EQUAL(watchdog::pid(), 0);
}

CAF_TEST(the last lease says bye and the watchdog exits killing nothing) {
  // A process group of our own that the watchdog watches.
  pid_t child = ::fork();
  if (child == 0) {
    ::setpgid(0, 0);
    for (;;)
      ::pause();
  }
  CAF_REQUIRE_GREATER(child, 0);
  ::setpgid(child, child);
  int pidfd = -1;
  {
    watchdog::lease l;
    CAF_REQUIRE_GREATER(watchdog::pid(), 0);
    pidfd = static_cast<int>(::syscall(SYS_pidfd_open, watchdog::pid(), 0));
    watchdog::watch_group(child);
    watchdog::watch_cgroup("/nonexistent-sandbox-cgroup");
  }
  CAF_REQUIRE_GREATER_OR_EQUAL(pidfd, 0);
  CAF_CHECK(exits(pidfd));
  ::close(pidfd);
  // The watched group was not killed.
  CAF_CHECK_EQUAL(::kill(child, 0), 0);
  int status = 0;
  CAF_CHECK_EQUAL(::waitpid(child, &status, WNOHANG), 0);
  ::kill(child, SIGKILL);
  ::waitpid(child, &status, 0);
}

CAF_TEST(watch calls without a lease do nothing) {
  CAF_REQUIRE_EQUAL(watchdog::pid(), 0);
  watchdog::watch_group(::getpgid(0));
  watchdog::forget_group(::getpgid(0));
  watchdog::watch_cgroup("/x");
  watchdog::forget_cgroup("/x");
  CAF_CHECK_EQUAL(watchdog::pid(), 0);
}
