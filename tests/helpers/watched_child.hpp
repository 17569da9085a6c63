#pragma once

// A forked child of the test under the watch filter of contained commands
// (syscall_watch.hpp), watched by a reactor of the test. Include after
// caf/test/unit_test.hpp.

#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "io/fd_message.hpp"
#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/io/reactor.hpp"

namespace sandbox::test {

/// Runs `calls` in a forked child under the watch filter, watched with a
/// policy that allows writes below `writable` only, and returns the
/// child's exit status (as from waitpid) and the violations reported.
/// The report comes before the watched call returns, so everything is
/// reported once the child has exited. Only system calls in the child:
/// the test has other threads.
template <class Calls>
std::pair<int, std::vector<sandbox::violation>>
watched_child(const std::vector<std::string>& writable, Calls calls) {
  auto* filter = sandbox::watch_filter(); // built here, not in the child
  int sv[2];
  CAF_REQUIRE_EQUAL(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
                    0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(sv[0]);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
      ::_exit(100);
    int listener
      = static_cast<int>(::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                   SECCOMP_FILTER_FLAG_NEW_LISTENER, filter));
    if (listener < 0)
      ::_exit(101);
    // Hand the listener to the test.
    char byte = 0;
    sandbox::fd_message m{&byte, 1};
    *m.attach() = listener;
    if (::sendmsg(sv[1], &m.msg, 0) != 1)
      ::_exit(102);
    ::close(listener);
    ::_exit(calls());
  }
  ::close(sv[1]);
  char byte = 0;
  sandbox::fd_message m{&byte, 1};
  int listener = -1;
  if (::recvmsg(sv[0], &m.msg, MSG_CMSG_CLOEXEC) == 1)
    listener = m.received();
  ::close(sv[0]);
  std::mutex mtx;
  std::vector<sandbox::violation> seen;
  int status = -1;
  {
    sandbox::reactor r{1};
    if (listener >= 0) {
      auto policy = std::make_shared<sandbox::watch_policy>();
      policy->writable = writable;
      policy->execution = 7;
      sandbox::watch_syscalls(r, sandbox::unique_fd{listener}, policy,
                              [&](pid_t, sandbox::violation v) {
                                std::lock_guard<std::mutex> guard{mtx};
                                seen.push_back(std::move(v));
                              });
    }
    ::waitpid(pid, &status, 0);
  }
  CAF_REQUIRE(listener >= 0);
  return {status, std::move(seen)};
}

template <class Calls>
std::pair<int, std::vector<sandbox::violation>>
watched_child(const std::string& writable, Calls calls) {
  return watched_child(std::vector<std::string>{writable}, std::move(calls));
}

} // namespace sandbox::test
