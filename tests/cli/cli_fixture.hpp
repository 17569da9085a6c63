#pragma once

// End-to-end tests of the `sandbox` CLI: run the real binary through
// /bin/sh and look at its output and exit status.
//
// Every suite runs twice (two ctest entries): against the embedded node,
// and with SANDBOX_TEST_REMOTE set against a `sandbox serve` node on a free
// loopback port, which the suite starts once. In that mode `cli_path()` is
// tests/helpers/remote_cli.cpp: it adds `--node` and runs each command in a
// session whose working directory is the CLI's current directory (created
// with `session create`, named with `--session`, stopped afterwards), so
// the same assertions hold for both.
//
// With SANDBOX_TEST_ISOLATION=contained (the `cli.<file>.contained` ctest
// entries) main() sets SANDBOX_ISOLATION=contained in the environment every
// CLI inherits (helpers/test_isolation.hpp), so each session the CLI
// creates, and the default of each `sandbox serve` started, is contained.

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helpers/serve_process.hpp"
#include "helpers/temp_dir.hpp"
#include "helpers/test_isolation.hpp"

namespace sandbox::test {

/// Whether the suites run against a remote node (SANDBOX_TEST_REMOTE).
inline bool remote_mode() {
  const char* v = std::getenv("SANDBOX_TEST_REMOTE");
  return v != nullptr && *v != '\0';
}

/// The node of the suite in remote mode (started on first use), else null.
inline serve_process* suite_node() {
  if (!remote_mode())
    return nullptr;
  static serve_process node;
  return &node;
}

/// The CLI the tests run: the real binary, or in remote mode the stand-in
/// that sends each command to the suite's node (see above).
inline const std::string& cli_path() {
  static const std::string path = [] {
    auto* node = suite_node();
    if (node == nullptr)
      return std::string{SANDBOX_CLI};
    ::setenv("SANDBOX_TEST_NODE", node->address.c_str(), 1);
    ::setenv("SANDBOX_TEST_REAL_CLI", SANDBOX_CLI, 1);
    return std::string{SANDBOX_TEST_REMOTE_CLI};
  }();
  return path;
}

struct cli_result {
  int status = -1;
  std::string out;
};

/// Runs the shell command `cmd` through /bin/sh and captures its stdout and
/// exit status (128 + the signal number when a signal ended the shell).
inline cli_result run_shell(const std::string& cmd) {
  cli_result r;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr)
    return r;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    r.out.append(buf, n);
  int st = ::pclose(f);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

/// Runs `sandbox <args>` (a shell fragment) and captures stdout (and
/// stderr when `merge_stderr`).
inline cli_result sandbox_cli(const std::string& args,
                              bool merge_stderr = false) {
  std::string cmd = cli_path() + " " + args;
  if (merge_stderr)
    cmd += " 2>&1";
  return run_shell(cmd);
}

/// The bytes of a file ("" when missing).
inline std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Writes a file.
inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out{path, std::ios::binary | std::ios::trunc};
  out << bytes;
}

/// The names in a directory, sorted (empty when it cannot be read).
inline std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..")
        out.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// How `spawn_cli` runs the CLI.
struct spawn_options {
  std::string cwd; // empty: the test's
  std::string stdin_path = "/dev/null";
  std::vector<std::string> env; // NAME=VALUE added
  int limit_seconds = 60;       // killed (SIGKILL) after this long
};

/// What a CLI run did: exit status or signal, stdout, stderr, and the peak
/// RSS (KiB) of the CLI and what it waited for.
struct spawn_result {
  bool exited = false;
  int status = -1; // exit status, or 128 + the signal
  std::string out;
  std::string err;
  long maxrss_kb = 0;
};

/// Runs `SANDBOX_CLI args...` directly (no shell: any bytes but NUL pass
/// through) under `timeout -s KILL`, capturing stdout and stderr in files.
inline spawn_result spawn_cli(const std::vector<std::string>& args,
                              const spawn_options& o = {}) {
  temp_dir io;
  auto out_path = io.at("out");
  auto err_path = io.at("err");
  std::vector<std::string> argv_s{"timeout", "-s", "KILL",
                                  std::to_string(o.limit_seconds), cli_path()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e)
    env_s.emplace_back(*e);
  env_s.insert(env_s.end(), o.env.begin(), o.env.end());
  std::vector<char*> envp;
  for (auto& e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, o.stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!o.cwd.empty())
    posix_spawn_file_actions_addchdir_np(&fa, o.cwd.c_str());
  spawn_result r;
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, "timeout", &fa, nullptr, argv.data(),
                          envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return r;
  int st = 0;
  struct rusage ru {};
  while (::wait4(pid, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  r.exited = WIFEXITED(st);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.maxrss_kb = ru.ru_maxrss;
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

/// Decodes base64 (RFC 4648, with padding).
inline std::string unbase64(const std::string& in) {
  static const std::string alphabet
    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    auto v = alphabet.find(c);
    if (v == std::string::npos)
      continue; // padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

/// Number of lines in `text`.
inline size_t count_lines(const std::string& text) {
  size_t n = 0;
  for (char c : text)
    n += c == '\n';
  return n;
}

/// Splits JSON-lines output.
inline std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> result;
  size_t pos = 0;
  while (pos < out.size()) {
    auto end = out.find('\n', pos);
    if (end == std::string::npos)
      end = out.size();
    if (end > pos)
      result.push_back(nlohmann::json::parse(out.substr(pos, end - pos)));
    pos = end + 1;
  }
  return result;
}

} // namespace sandbox::test
