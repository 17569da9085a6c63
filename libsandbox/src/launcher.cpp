#include "sandbox/launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "sandbox/validation.hpp"

extern char** environ;

namespace sandbox {

namespace {

// Pipes are created close-on-exec: only the ends dup2'ed onto 0, 1 and 2
// survive the exec, so a child never holds another child's pipe open (which
// would delay that child's EOF for as long as this one lives).
result<void> make_pipe(unique_fd& read_end, unique_fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return make_errno_error(errno, "pipe2");
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return {};
}

/// Owns posix_spawn's file actions and attributes for one launch.
struct spawn_setup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  spawn_setup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~spawn_setup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
};

// Step: wire stdin/stdout/stderr, change directory, close everything else.
void add_file_actions(spawn_setup& s, const launch_spec& spec, int stdin_r,
                      int stdout_w, int stderr_w) {
  if (stdin_r >= 0)
    posix_spawn_file_actions_adddup2(&s.actions, stdin_r, 0);
  else
    posix_spawn_file_actions_addopen(&s.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&s.actions, stdout_w, 1);
  posix_spawn_file_actions_adddup2(&s.actions, stderr_w, 2);
  posix_spawn_file_actions_addchdir_np(&s.actions, spec.cwd.c_str());
  // Descriptors that a host application opened without O_CLOEXEC must not
  // leak into children either.
  posix_spawn_file_actions_addclosefrom_np(&s.actions, 3);
}

// Step: own process group (so timeout/cancel/stop reach every descendant
// that stays in it), default dispositions and an empty mask (the node may
// ignore SIGPIPE or block signals in its threads; children must not inherit
// that).
void add_attributes(spawn_setup& s) {
  // Every bit set, not sigfillset: glibc's sigfillset leaves out its two
  // internal signals (32 and 33), and its posix_spawn then sets them to
  // SIG_IGN in the child, an ignore that exec keeps and every descendant
  // would inherit.
  sigset_t all;
  std::memset(&all, 0xff, sizeof(all));
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&s.attr, &all);
  posix_spawnattr_setsigmask(&s.attr, &none);
  posix_spawnattr_setpgroup(&s.attr, 0);
  posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETPGROUP
                                      | POSIX_SPAWN_SETSIGDEF
                                      | POSIX_SPAWN_SETSIGMASK);
}

/// Step: flatten argv and env into the NULL-terminated arrays exec wants.
struct exec_arrays {
  std::vector<std::string> env_strings;
  std::vector<char*> argv;
  std::vector<char*> envp;
  explicit exec_arrays(const launch_spec& spec) {
    for (auto& arg : spec.argv)
      argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    env_strings.reserve(spec.env.size());
    for (auto& [k, v] : spec.env)
      env_strings.push_back(k + "=" + v);
    for (auto& kv : env_strings)
      envp.push_back(const_cast<char*>(kv.c_str()));
    envp.push_back(nullptr);
  }
};

/// Step: the working directory must be a directory the child can enter.
/// Checked here, once, so that a failing chdir is reported as what it is
/// rather than as a failure to start the shell.
result<void> check_cwd(const std::string& cwd) {
  struct stat st;
  if (::stat(cwd.c_str(), &st) != 0) {
    auto err = errno;
    if (err == ENOENT || err == ENOTDIR)
      return error{errc::path_not_found,
                   fmt::format("working directory does not exist: {}", cwd)};
    return make_errno_error(err, fmt::format("working directory {}", cwd));
  }
  if (!S_ISDIR(st.st_mode))
    return error{errc::path_not_found,
                 fmt::format("working directory is not a directory: {}", cwd)};
  // chdir needs search permission on the directory itself.
  if (::access(cwd.c_str(), X_OK) != 0)
    return make_errno_error(errno, fmt::format("working directory {}", cwd));
  return {};
}

/// Explains E2BIG: the kernel has a limit per string and one for all of
/// them together.
error too_long(const launch_spec& spec, const exec_arrays& arrays) {
  size_t bytes = 0;
  for (auto* arg : arrays.argv)
    bytes += arg != nullptr ? std::strlen(arg) + 1 + sizeof(char*) : 0;
  for (auto* kv : arrays.envp)
    bytes += kv != nullptr ? std::strlen(kv) + 1 + sizeof(char*) : 0;
  return error{errc::invalid_argument,
               fmt::format("cannot start {}: {}: the arguments and "
                           "environment take {} bytes; the kernel allows {} "
                           "bytes in all (ARG_MAX) and {} bytes per string "
                           "(MAX_ARG_STRLEN)",
                           spec.executable, std::strerror(E2BIG), bytes,
                           ::sysconf(_SC_ARG_MAX), max_argument_bytes())};
}

} // namespace

result<launched_child> launch(const launch_spec& spec) {
  if (auto ok = check_cwd(spec.cwd); !ok)
    return ok.error();
  launched_child child;
  unique_fd stdin_r;
  unique_fd stdout_w;
  unique_fd stderr_w;
  if (spec.pipe_stdin) {
    if (auto ok = make_pipe(stdin_r, child.stdin_w); !ok)
      return ok.error();
  }
  if (auto ok = make_pipe(child.stdout_r, stdout_w); !ok)
    return ok.error();
  if (auto ok = make_pipe(child.stderr_r, stderr_w); !ok)
    return ok.error();
  spawn_setup setup;
  add_file_actions(setup, spec, stdin_r.get(), stdout_w.get(), stderr_w.get());
  add_attributes(setup);
  exec_arrays arrays{spec};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, spec.executable.c_str(), &setup.actions,
                         &setup.attr, arrays.argv.data(), arrays.envp.data());
  if (rc == E2BIG)
    return too_long(spec, arrays);
  if (rc != 0)
    return error{errc_from_errno(rc),
                 fmt::format("cannot start {}: {}", spec.executable,
                             std::strerror(rc))};
  child.pid = pid;
  // The pid cannot be reused before we reap it, so opening the pidfd after
  // the spawn is race-free.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    auto err = errno;
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return make_errno_error(err, "pidfd_open");
  }
  ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);
  child.pidfd.reset(pidfd);
  return child;
}

env_map current_environment() {
  env_map result;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv{*e};
    auto eq = kv.find('=');
    if (eq == std::string_view::npos)
      continue;
    result.emplace(std::string{kv.substr(0, eq)},
                   std::string{kv.substr(eq + 1)});
  }
  return result;
}

} // namespace sandbox
