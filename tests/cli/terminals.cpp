#define CAF_SUITE cli.terminals
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// `sandbox run --tty` from a real terminal (docs/cli.md "Processes"): the
// CLI runs on a pseudo-terminal this suite holds the master of, as it would
// in a terminal window. Its terminal is put in raw mode and restored, the
// keys typed reach the command's own terminal (^C too, as a key), the
// window's size is the command's and follows a resize, and the exit status
// is the command's.

#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "cli_fixture.hpp"

using sandbox::test::cli_path;

namespace {

/// The CLI running on a terminal whose master this holds.
struct cli_on_terminal {
  int master = -1;
  pid_t pid = -1;
  std::string seen;

  cli_on_terminal(const std::string& args, unsigned short rows,
                  unsigned short cols) {
    struct winsize ws = {};
    ws.ws_row = rows;
    ws.ws_col = cols;
    auto cmd = "exec " + cli_path() + " " + args;
    pid = ::forkpty(&master, nullptr, nullptr, &ws);
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (pid < 0)
      throw std::runtime_error("forkpty failed");
  }

  ~cli_on_terminal() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      int st = 0;
      ::waitpid(pid, &st, 0);
    }
    if (master >= 0)
      ::close(master);
  }

  /// Reads what the terminal shows until it holds `want`; each wait for
  /// more is at most 30 s (the bound of a stuck test, not a timing).
  bool wait_for(const std::string& want) {
    while (seen.find(want) == std::string::npos) {
      struct pollfd p = {master, POLLIN, 0};
      if (::poll(&p, 1, 30000) <= 0)
        return false;
      char buf[4096];
      auto n = ::read(master, buf, sizeof buf);
      if (n <= 0)
        return false;
      seen.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  void type(const std::string& keys) {
    CAF_REQUIRE_EQUAL(::write(master, keys.data(), keys.size()),
                      static_cast<ssize_t>(keys.size()));
  }

  /// The CLI's exit status, once it has ended (reading on meanwhile, so
  /// that it never blocks on a full terminal).
  int wait_exit() {
    for (;;) {
      int st = 0;
      auto r = ::waitpid(pid, &st, WNOHANG);
      if (r == pid) {
        pid = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      struct pollfd p = {master, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        char buf[4096];
        auto n = ::read(master, buf, sizeof buf);
        if (n > 0)
          seen.append(buf, static_cast<size_t>(n));
      }
    }
  }
};

/// A shell loop that waits in `wait`, which a trapped signal interrupts.
const std::string idle = "while :; do sleep 1 & wait $!; done";

} // namespace

CAF_TEST(run tty shows the window size passes keys and exits with the status) {
  cli_on_terminal t{"run --tty -- 'stty size; read x; echo got-$x; exit 7'", 33,
                    111};
  REQUIRE_THAT(t.wait_for("33 111"), t.seen);
  // Raw mode: the CR typed reaches the command's terminal, which makes it
  // the end of the line.
  t.type("hello\r");
  CHECK_THAT(t.wait_for("got-hello"), t.seen);
  CAF_CHECK_EQUAL(t.wait_exit(), 7);
  // The CLI's terminal is as it was: canonical, echoing.
  struct termios after;
  CAF_REQUIRE_EQUAL(::tcgetattr(t.master, &after), 0);
  CAF_CHECK((after.c_lflag & ICANON) != 0);
  CAF_CHECK((after.c_lflag & ECHO) != 0);
}

CAF_TEST(run tty follows a resize of the window) {
  cli_on_terminal t{"run --tty -- 'trap \"stty size; exit 0\" WINCH; "
                    "echo rea\"\"dy; "
                      + idle + "'",
                    24, 80};
  REQUIRE_THAT(t.wait_for("ready"), t.seen);
  struct winsize ws = {};
  ws.ws_row = 50;
  ws.ws_col = 150;
  CAF_REQUIRE_EQUAL(::ioctl(t.master, TIOCSWINSZ, &ws), 0);
  CHECK_THAT(t.wait_for("50 150"), t.seen);
  CAF_CHECK_EQUAL(t.wait_exit(), 0);
}

CAF_TEST(ctrl c typed goes to the command and not to the cli) {
  cli_on_terminal t{"run --tty -- 'trap \"echo caught-int; exit 5\" INT; "
                    "echo rea\"\"dy; "
                      + idle + "'",
                    24, 80};
  REQUIRE_THAT(t.wait_for("ready"), t.seen);
  t.type("\x03");
  CHECK_THAT(t.wait_for("caught-int"), t.seen);
  CAF_CHECK_EQUAL(t.wait_exit(), 5);
}

CAF_TEST(run tty with a size runs on that size) {
  cli_on_terminal t{"run --tty --rows 12 --cols 34 -- stty size", 24, 80};
  CHECK_THAT(t.wait_for("12 34"), t.seen);
  CAF_CHECK_EQUAL(t.wait_exit(), 0);
}

CAF_TEST(rows without tty is a usage error) {
  auto r = sandbox::test::sandbox_cli("run --rows 5 -- true", true);
  CAF_CHECK_EQUAL(r.status, 2);
  CHECK_THAT(r.out.find("--rows and --cols need --tty") != std::string::npos,
             r.out);
}

CAF_TEST(json with an attached tty is a usage error) {
  auto r = sandbox::test::sandbox_cli("--json run --tty -- true", true);
  CAF_CHECK_EQUAL(r.status, 2);
  CHECK_THAT(r.out.find("--json does not apply") != std::string::npos, r.out);
}
