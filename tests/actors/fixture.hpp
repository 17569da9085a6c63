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
#include "sandbox/proc_stats.hpp"
#include "sandbox/process_tree.hpp"

namespace sandbox::test {

/// Counts descriptors that stay open. The reactor holds one or two for a
/// moment while it scans /proc (after each SIGCHLD), so a sample may be high
/// by those: sample after round trips through `s` until the count reaches
/// `expected`, at most 500 times, and return the smallest count seen. A
/// real leak never comes back down.
template <class Session>
size_t settled_fds(Session& s, size_t expected) {
  size_t best = open_fd_count();
  for (int i = 0; i < 500 && best > expected; ++i) {
    (void) s.info();
    best = std::min(best, open_fd_count());
  }
  return best;
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
