#pragma once

// End-to-end tests of the `sandbox` CLI: run the real binary through
// /bin/sh and look at its output and exit status.

#include <sys/wait.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sandbox::test {

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
  std::string cmd = std::string{SANDBOX_CLI} + " " + args;
  if (merge_stderr)
    cmd += " 2>&1";
  return run_shell(cmd);
}

/// A fresh directory under $TMPDIR (/tmp when unset), as an absolute path
/// without symbolic links; removed with its contents at the end of the test.
struct temp_dir {
  std::string path;
  temp_dir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string{base != nullptr && *base != '\0' ? base
                                                                    : "/tmp"}
                       + "/sandbox-cli-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed in " + tmpl);
    char real[PATH_MAX];
    path = ::realpath(tmpl.c_str(), real) != nullptr ? real : tmpl;
  }
  ~temp_dir() {
    run_shell("rm -rf '" + path + "'");
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

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
