#pragma once

// A `sandbox serve` process for tests, on a free loopback port (never a
// fixed one): started from the built CLI, its address read from its ready
// line.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers/temp_dir.hpp"

namespace sandbox::test {

/// A `sandbox serve --port 0` process on loopback; the address comes from
/// its ready line. Ended with SIGTERM (it stops every session) when the
/// test program exits, and with it if the test program dies.
struct serve_process {
  pid_t pid = -1;
  std::string address;
  std::string ready;
  temp_dir dir;

  /// Starts `sandbox serve --port 0 --base-dir DIR/sessions EXTRA...`;
  /// its stderr (the log) goes to `log_path` when given.
  explicit serve_process(std::vector<std::string> extra = {},
                         const std::string& log_path = {}) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe failed");
    std::vector<std::string> args{
      SANDBOX_CLI, "serve", "--port", "0", "--base-dir", dir.at("sessions")};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    auto parent = ::getpid();
    pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent)
        ::_exit(1);
      ::dup2(fds[1], 1);
      if (!log_path.empty()) {
        int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (log >= 0)
          ::dup2(log, 2);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    // The ready line: `listening on 127.0.0.1:PORT`.
    char c;
    while (::read(fds[0], &c, 1) == 1 && c != '\n')
      ready += c;
    ::close(fds[0]);
    const std::string prefix = "listening on ";
    auto port_at = ready.find("\"port\":");
    if (ready.rfind(prefix, 0) == 0)
      address = ready.substr(prefix.size());
    else if (ready.rfind("{", 0) == 0 && port_at != std::string::npos)
      address = "127.0.0.1:"
                + std::to_string(
                  std::stoul(ready.substr(port_at + 7))); // with --json
    else
      throw std::runtime_error("sandbox serve did not start: " + ready);
  }

  ~serve_process() {
    stop(SIGTERM);
  }

  /// Sends `sig` and waits for the exit; returns the exit status (128 +
  /// the signal when one ended it), -1 when it was not running.
  int stop(int sig) {
    if (pid <= 0)
      return -1;
    ::kill(pid, sig);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  serve_process(const serve_process&) = delete;
  serve_process& operator=(const serve_process&) = delete;
};

/// The bytes of a file ("" when missing).
inline std::string slurp_file(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

/// A process whose stdout the test reads as it comes (stdin /dev/null).
struct live_process {
  pid_t pid = -1;
  int out = -1;
  std::string seen;

  explicit live_process(std::vector<std::string> args) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return;
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    pid = ::fork();
    if (pid == 0) {
      int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, 0);
      ::dup2(fds[1], 1);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    out = fds[0];
  }

  ~live_process() {
    kill(SIGKILL);
    if (out >= 0)
      ::close(out);
  }

  /// Reads until `n` complete lines arrived (false at the end of output).
  bool wait_lines(size_t n) {
    auto count = [&] {
      size_t k = 0;
      for (char c : seen)
        k += c == '\n';
      return k;
    };
    char buf[4096];
    while (count() < n) {
      auto got = ::read(out, buf, sizeof(buf));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        return false;
      seen.append(buf, static_cast<size_t>(got));
    }
    return true;
  }

  std::vector<std::string> lines() const {
    std::vector<std::string> result;
    size_t pos = 0;
    for (auto nl = seen.find('\n'); nl != std::string::npos;
         pos = nl + 1, nl = seen.find('\n', pos))
      result.push_back(seen.substr(pos, nl - pos));
    return result;
  }

  /// Sends `sig` and waits for the exit; returns the status (128 + the
  /// signal when one ended it), -1 when it was not running.
  int kill(int sig) {
    if (pid <= 0)
      return -1;
    ::kill(pid, sig);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  /// Waits for the exit (reading the rest of stdout); returns the status.
  int wait() {
    char buf[4096];
    ssize_t got;
    while ((got = ::read(out, buf, sizeof(buf))) != 0) {
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0)
        break;
      seen.append(buf, static_cast<size_t>(got));
    }
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
};

/// What a finished process printed and its exit status.
struct captured {
  int status = -1;
  std::string out;
};

/// Runs `args` to its end (stdin /dev/null, stderr inherited).
inline captured spawn_capture(std::vector<std::string> args) {
  live_process p{std::move(args)};
  captured r;
  r.status = p.wait();
  r.out = p.seen;
  return r;
}

} // namespace sandbox::test
