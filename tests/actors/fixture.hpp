#pragma once

// Shared fixture of the actors suites: a real node (threaded scheduler and
// the reactor), because children are real processes. Waiting is always on
// an event (a reply, a process exit), never a sleep.

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "sandbox/actors/blocking_session.hpp"
#include "sandbox/process_tree.hpp"

namespace sandbox::test {

/// Counts the open file descriptors of this process.
inline size_t open_fds() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (auto* e = ::readdir(d))
      if (e->d_name[0] != '.')
        ++n;
    ::closedir(d);
  }
  return n - 1; // the directory stream itself
}

/// Counts descriptors that stay open. The reactor holds one or two for a
/// moment while it scans /proc (after each SIGCHLD), so a sample may be high
/// by those: sample after round trips through `s` until the count reaches
/// `expected`, at most 500 times, and return the smallest count seen. A
/// real leak never comes back down.
template <class Session>
size_t settled_fds(Session& s, size_t expected) {
  size_t best = open_fds();
  for (int i = 0; i < 500 && best > expected; ++i) {
    (void) s.info();
    best = std::min(best, open_fds());
  }
  return best;
}

/// Describes the open file descriptors (for failure messages).
inline std::string describe_fds() {
  std::string out;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (auto* e = ::readdir(d)) {
      if (e->d_name[0] == '.')
        continue;
      char target[256] = {0};
      auto path = std::string{"/proc/self/fd/"} + e->d_name;
      auto n = ::readlink(path.c_str(), target, sizeof(target) - 1);
      out += std::string{e->d_name} + "->" + (n > 0 ? target : "?") + " ";
    }
    ::closedir(d);
  }
  return out;
}

/// Resident memory of this process in bytes.
inline size_t resident_bytes() {
  long pages = 0;
  long resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(resident) * static_cast<size_t>(::getpagesize());
}

/// Live processes whose environment carries `marker` (KEY=VALUE prefix).
inline size_t processes_with(const std::string& prefix) {
  tree_query q;
  q.marker_prefix = prefix;
  return find_members(q).size();
}

/// Zombie children of this process (reaping must leave none).
inline size_t zombie_children() {
  size_t n = 0;
  auto self = ::getpid();
  for (auto& e : proc_snapshot())
    if (e.ppid == self && e.zombie())
      ++n;
  return n;
}

struct temp_dir {
  std::string path;
  temp_dir() {
    char tmpl[] = "/tmp/sandbox-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~temp_dir() {
    std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0)
      return;
  }
};

struct node_fixture {
  actors::embedded_node node;
  temp_dir dir;

  static actors::runtime_config config() {
    actors::runtime_config cfg;
    cfg.stop.grace = std::chrono::milliseconds{300};
    cfg.reap_all_orphans = true;
    return cfg;
  }

  node_fixture() : node(config()) {
  }

  actors::blocking_session make_session(env_map env = {}) {
    actors::session_config cfg;
    cfg.working_directory = dir.path + "/work";
    cfg.home_directory = dir.path + "/home";
    cfg.env = std::move(env);
    auto s = actors::blocking_session::create(node, cfg);
    if (!s)
      throw std::runtime_error(s.error().message);
    return std::move(*s);
  }

  /// The marker prefix of every process of `s`.
  static std::string marker(actors::blocking_session& s) {
    return std::string{marker_variable} + "=" + s.info()->id + "/";
  }
};

inline const char* test_child() {
  return SANDBOX_TEST_CHILD;
}

} // namespace sandbox::test

/// Requires that a `sandbox::result` holds a value; prints the error if not.
#define SANDBOX_REQUIRE_OK(expr)                                               \
  do {                                                                         \
    if (!(expr))                                                               \
      CAF_FAIL(#expr " failed: " << (expr).error().message);                   \
  } while (false)
