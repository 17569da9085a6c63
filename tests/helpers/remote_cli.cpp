// sandbox-test-remote-cli: stands in for the `sandbox` CLI when the CLI
// suites run against a remote node (SANDBOX_TEST_REMOTE). It runs the real
// CLI (SANDBOX_TEST_REAL_CLI) with `--node SANDBOX_TEST_NODE` added, and,
// for commands that work in a session, first creates one on that node whose
// working directory is the current directory and whose home is the one the
// embedded node would give ($TMPDIR/sandbox-UID/home): what the embedded
// node's ephemeral session is, made explicit with `session create` and
// `--session`. The session is stopped once the command ended.
//
// Everything else passes through unchanged: descriptors (also closed ones),
// the environment, signals (forwarded to the CLI), and the exit status (a
// CLI ended by a signal ends this program with the same signal).

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

volatile sig_atomic_t child_pid = 0;

void forward(int sig) {
  // kill may set errno; the interrupted code may be about to read it.
  int saved = errno;
  if (child_pid > 0)
    ::kill(child_pid, sig);
  errno = saved;
}

std::vector<char*> c_args(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (auto& a : args)
    out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

/// Runs `args` with stdout into a string (stdin and stderr as ours) and
/// returns the exit status (-1 if it could not run).
int capture(std::vector<std::string> args, std::string& out) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  auto argv = c_args(args);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return -1;
  }
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof(buf))) != 0) {
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/// Whether the command needs no session of its own (session management,
/// help, version) or already names one.
bool passes_through(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--")
      return false;
    if (a == "session" || a == "serve" || a == "help" || a == "--help"
        || a == "-h" || a == "--version" || a == "--session"
        || a.rfind("--session=", 0) == 0 || a == "--node"
        || a.rfind("--node=", 0) == 0)
      return true;
  }
  return false;
}

} // namespace

int main(int argc, char** argv) {
  const char* real = std::getenv("SANDBOX_TEST_REAL_CLI");
  const char* node = std::getenv("SANDBOX_TEST_NODE");
  if (real == nullptr || node == nullptr) {
    std::fprintf(stderr, "remote_cli: SANDBOX_TEST_REAL_CLI and "
                         "SANDBOX_TEST_NODE must be set\n");
    return 125;
  }
  // A closed standard descriptor is /dev/null, as the CLI makes it itself;
  // here it also keeps the pipes below off descriptors 0-2.
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF)
      (void) ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
  std::vector<std::string> args{real, "--node", node};
  if (passes_through(argc, argv)) {
    args.insert(args.end(), argv + 1, argv + argc);
    auto cargs = c_args(args);
    ::execv(real, cargs.data());
    return 127;
  }
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr)
    return 125;
  const char* tmp = std::getenv("TMPDIR");
  std::string home = std::string{tmp != nullptr && *tmp != '\0' ? tmp : "/tmp"}
                     + "/sandbox-" + std::to_string(::geteuid()) + "/home";
  // Interrupts wait (blocked) until the CLI runs, then go to it: one that
  // comes while the session is made is not lost.
  sigset_t interrupts;
  sigemptyset(&interrupts);
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    sigaddset(&interrupts, sig);
  sigset_t old_mask;
  ::sigprocmask(SIG_BLOCK, &interrupts, &old_mask);
  std::string out;
  int created = capture({real, "--node", node, "session", "create", "--workdir",
                         cwd, "--home", home, "--json"},
                        out);
  auto at = out.find("\"id\":\"");
  if (created != 0 || at == std::string::npos) {
    // The CLI's error went to its stdout (--json), captured here: say why.
    while (!out.empty() && out.back() == '\n')
      out.pop_back();
    std::fprintf(stderr, "remote_cli: `session create` on node %s %s: %s\n",
                 node,
                 created < 0    ? "could not run"
                 : created == 0 ? "printed no session id"
                                : ("exited " + std::to_string(created)).c_str(),
                 out.empty() ? "(no output)" : out.c_str());
    return created == 0 ? 125 : created < 0 ? 125 : created;
  }
  auto id = out.substr(at + 6, 36);
  args.insert(args.end(), {"--session", id});
  args.insert(args.end(), argv + 1, argv + argc);
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  auto cargs = c_args(args);
  auto parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    // A SIGKILL of this stand-in is one of the CLI (tests kill it).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(128 + SIGKILL);
    ::signal(SIGPIPE, SIG_DFL);
    // Interrupts stay blocked across exec: the CLI blocks them itself and
    // takes a pending one with sigwait, as it would have.
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
      ::signal(sig, SIG_DFL);
    ::execv(real, cargs.data());
    ::_exit(127);
  }
  child_pid = pid;
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  child_pid = 0;
  std::string ignored;
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  {
    std::vector<std::string> stop{real, "--node", node, "session", "stop", id};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, devnull, 1);
    posix_spawn_file_actions_adddup2(&fa, devnull, 2);
    auto sargs = c_args(stop);
    pid_t s = -1;
    if (::posix_spawn(&s, real, &fa, nullptr, sargs.data(), environ) == 0)
      while (::waitpid(s, nullptr, 0) < 0 && errno == EINTR) {
      }
    posix_spawn_file_actions_destroy(&fa);
  }
  if (WIFSIGNALED(st)) {
    ::signal(WTERMSIG(st), SIG_DFL);
    ::raise(WTERMSIG(st));
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
