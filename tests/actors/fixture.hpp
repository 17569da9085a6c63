#pragma once

// Shared fixture of the actors suites: a real node (threaded scheduler and
// the reactor), because children are real processes. Waiting is always on
// an event (a reply, a process exit), never a sleep.

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "helpers/temp_dir.hpp"
#include "helpers/test_isolation.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/process/proc_stats.hpp"
#include "sandbox/process/process_tree.hpp"

namespace sandbox::test {

/// The descriptors of this process that an execution could leak: every
/// open descriptor except reads of /proc, with a contained execution's
/// seccomp listeners counted apart. The subreaper (after each SIGCHLD) and
/// the stop sweep open /proc entries on reactor threads at any moment and
/// close them before they return, so those are left out; the descriptors
/// of an execution (its pipes, its pidfd) are all closed before its result
/// is delivered, so `count` is exact right after a reply. A listener is
/// closed by the reactor when the kernel reports that no process uses the
/// filter any more, once the last of them was reaped, which can come just
/// after the result: `leaked_fds` waits for them. Compared by count;
/// printed with what each descriptor is, so that a failed check names the
/// leaked ones.
struct fd_census {
  size_t count = 0;
  size_t listeners = 0;
  std::string targets;

  friend bool operator==(const fd_census& x, const fd_census& y) {
    return x.count == y.count;
  }

  friend std::string to_string(const fd_census& x) {
    return std::to_string(x.count) + " (" + x.targets + ")";
  }
};

inline fd_census plumbing_fds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr)
    throw std::runtime_error("cannot list /proc/self/fd");
  fd_census result;
  char target[PATH_MAX];
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] == '.')
      continue;
    auto link = std::string{"/proc/self/fd/"} + e->d_name;
    auto len = ::readlink(link.c_str(), target, sizeof(target));
    if (len < 0)
      continue; // closed since the directory was read: not held
    std::string_view t{target, static_cast<size_t>(len)};
    if (t == "/proc" || t.substr(0, 6) == "/proc/")
      continue; // includes the directory stream listing /proc/self/fd
    if (t == "anon_inode:seccomp notify") {
      ++result.listeners;
      continue;
    }
    ++result.count;
    if (!result.targets.empty())
      result.targets += ", ";
    result.targets += std::string{e->d_name} + " " + std::string{t};
  }
  ::closedir(d);
  return result;
}

/// What is open now that was not at `before`, once every execution of the
/// test has ended: empty when the count is back to `before` and no seccomp
/// listener is left but those open at `before` (a contained session's
/// launcher's, which its session keeps), else what is open. Waits for that
/// up to 10 s (a command's own listener closes just after its result, see
/// fd_census).
inline std::string leaked_fds(const fd_census& before) {
  auto now = plumbing_fds();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto settled = [&] {
    return now == before && now.listeners <= before.listeners;
  };
  while (!settled() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
    now = plumbing_fds();
  }
  if (settled())
    return {};
  return "open: " + to_string(now) + "; seccomp listeners: "
         + std::to_string(now.listeners) + "; before: " + to_string(before);
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

/// The configuration every node of the suites starts from: the defaults,
/// with the isolation SANDBOX_TEST_ISOLATION chooses as the node's default
/// (helpers/test_isolation.hpp). Suites that configure a node of their own
/// start from this one, so the switch is in this one place.
inline actors::runtime_config suite_runtime_config() {
  actors::runtime_config cfg;
  cfg.isolation = suite_isolation();
  // Contained sessions run the test's helper programs: their directory is
  // in every session's view (read-only).
  auto child = visible_program(SANDBOX_TEST_CHILD);
  cfg.isolation_allow_read.push_back(child.substr(0, child.rfind('/')));
  for (auto& dir : sanitizer_directories())
    cfg.isolation_allow_read.push_back(dir);
  return cfg;
}

struct node_fixture {
  actors::embedded_node node;
  temp_dir dir;

  static actors::runtime_config config() {
    auto cfg = suite_runtime_config();
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
    auto info = s.info();
    if (!info)
      throw std::runtime_error(info.error().message);
    return std::string{marker_variable} + "=" + info->id + "/";
  }
};

/// Runs an execution that prints `line` on stdout and then blocks until its
/// timeout ends it, and returns the result of an attempt in which `line` was
/// streamed before that end. A timeout is a deadline, not an event: on a
/// loaded machine it may expire before the child printed anything, and the
/// test would check nothing. Whether the line came first is decided by an
/// event (its chunk arrived); an attempt that the deadline won is repeated
/// with twice the timeout, `attempts` times at most. `run(opts, on_chunk)`
/// performs one execution with `opts` (its timeout set by this function).
template <class Run>
result<exec_result> run_until_streamed(Run run, const std::string& line,
                                       std::chrono::milliseconds timeout,
                                       exec_options opts = {},
                                       int attempts = 5) {
  for (int i = 1;; ++i, timeout *= 2) {
    opts.timeout = timeout;
    std::string out;
    auto r = run(opts, [&out](const output_chunk& c) {
      if (c.stream == stream_kind::out)
        out += c.data;
    });
    if (!r || out.find(line) != std::string::npos || i == attempts)
      return r;
  }
}

/// The test child as commands in a session reach it (a copy outside /tmp
/// when the build tree is below it: temp_dir.hpp).
inline const char* test_child() {
  static const std::string path = visible_program(SANDBOX_TEST_CHILD);
  return path.c_str();
}

} // namespace sandbox::test
