#define CAF_SUITE actors.node_death
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Nothing outlives the node: a host program that embeds a node (the
// node-host helper) runs `sleep 300 & sleep 300` in two sessions and dies;
// the process-wide watchdog ends every one of those processes.

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "helpers/serve_process.hpp"
#include "helpers/temp_dir.hpp"
#include "helpers/test_isolation.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/process/process_tree.hpp"

namespace {

using namespace std::chrono_literals;
using sandbox::test::live_process;
using sandbox::test::temp_dir;

/// What the helper reported before `ready`.
struct victim {
  std::string mode;
  std::string cgroup;
  std::vector<pid_t> pids;
  std::vector<std::string> sessions;
  pid_t watchdog = 0;
};

bool read_until_ready(live_process& p, victim& v) {
  for (size_t n = 1;; ++n) {
    if (!p.wait_lines(n))
      return false;
    auto line = p.lines()[n - 1];
    if (line == "ready")
      return true;
    auto space = line.find(' ');
    auto key = line.substr(0, space);
    auto value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "pid")
      v.pids.push_back(std::stoi(value));
    else if (key == "session")
      v.sessions.push_back(value);
    else if (key == "watchdog")
      v.watchdog = std::stoi(value);
    else if (key == "mode")
      v.mode = value;
    else if (key == "cgroup")
      v.cgroup = value;
  }
}

/// pidfds of `pids`, opened while they run (so that a reused pid is never
/// mistaken for one of them); -1 for a process that is gone already.
std::vector<int> open_pidfds(const std::vector<pid_t>& pids) {
  std::vector<int> fds;
  for (auto pid : pids)
    fds.push_back(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  return fds;
}

/// Waits until every process behind `fds` has ended (a pidfd becomes
/// readable at the exit), `limit` at most; closes them. Returns how many
/// were still running at the limit.
size_t still_running_after(std::vector<int> fds,
                           std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<pollfd> waiting;
  for (auto fd : fds)
    if (fd >= 0)
      waiting.push_back(pollfd{fd, POLLIN, 0});
  while (!waiting.empty()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      break;
    auto n = ::poll(waiting.data(), waiting.size(),
                    static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR)
      break;
    for (auto i = waiting.begin(); i != waiting.end();) {
      if (i->revents != 0) {
        ::close(i->fd);
        i = waiting.erase(i);
      } else {
        ++i;
      }
    }
  }
  for (auto& p : waiting)
    ::close(p.fd);
  return waiting.size();
}

/// Every process in the PID namespaces of `pids` other than the test's
/// own: a contained session's, its init (PID 1 there) included, whose
/// marker-less life would otherwise go unseen.
std::vector<pid_t> namespace_members(const std::vector<pid_t>& pids) {
  auto ns_of = [](pid_t pid) -> ino_t {
    struct stat st;
    auto path = "/proc/" + std::to_string(pid) + "/ns/pid";
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  };
  auto own = ns_of(::getpid());
  std::set<ino_t> spaces;
  for (auto pid : pids)
    if (auto ns = ns_of(pid); ns != 0 && ns != own)
      spaces.insert(ns);
  std::vector<pid_t> out;
  if (spaces.empty())
    return out;
  for (auto& e : sandbox::proc_snapshot())
    if (!e.zombie() && spaces.count(ns_of(e.pid)) != 0)
      out.push_back(e.pid);
  return out;
}

/// Live (non-zombie) processes of the sessions, found by their marker, and
/// live processes among `pids`.
size_t leftovers(const victim& v) {
  size_t n = 0;
  for (auto& id : v.sessions) {
    sandbox::tree_query q;
    q.marker_prefix = std::string{sandbox::marker_variable} + "=" + id + "/";
    n += sandbox::find_members(q).size();
  }
  auto snapshot = sandbox::proc_snapshot();
  for (auto pid : v.pids)
    for (auto& e : snapshot)
      n += e.pid == pid && !e.zombie();
  return n;
}

/// Runs the helper with `options`, ends it with `end(helper_pid)` once its
/// executions run, and checks that all of it is gone within 2 s. Returns
/// what the helper reported.
template <class End>
victim
check_nothing_outlives(const std::vector<std::string>& options, End end) {
  temp_dir dir;
  std::vector<std::string> args{SANDBOX_TEST_NODE_HOST, "die", dir.path};
  args.insert(args.end(), options.begin(), options.end());
  live_process helper{args};
  victim v;
  CAF_REQUIRE(read_until_ready(helper, v));
  CAF_MESSAGE("containment: " << v.mode);
  CAF_REQUIRE_EQUAL(v.sessions.size(), 2u);
  // Two sleeps per execution at least (the shell may exec the last one).
  CAF_REQUIRE_GREATER_OR_EQUAL(v.pids.size(), 4u);
  CAF_REQUIRE_GREATER(v.watchdog, 0);
  auto watched = v.pids;
  watched.push_back(v.watchdog);
  // A contained session's init too: it has no marker, and a change of its
  // ids once cleared its parent-death signal, so that it outlived the node.
  auto members = namespace_members(v.pids);
  if (sandbox::test::contained_run())
    CAF_CHECK_GREATER(members.size(), v.pids.size() / 2);
  watched.insert(watched.end(), members.begin(), members.end());
  auto fds = open_pidfds(watched);
  for (auto fd : fds)
    CAF_REQUIRE_GREATER_OR_EQUAL(fd, 0); // every one of them runs
  end(helper.pid);
  CAF_CHECK_EQUAL(still_running_after(std::move(fds), 2000ms), 0u);
  CAF_CHECK_EQUAL(leftovers(v), 0u);
  // The helper's stdout reaches its end: the watchdog held no copy of it.
  helper.wait();
  return v;
}

void sigkill(pid_t node) {
  ::kill(node, SIGKILL);
}

} // namespace

CAF_TEST(a SIGKILLed node embedded in a host program leaves no process) {
  // The mode the host supports (cgroup where cgroup v2 is writable).
  check_nothing_outlives({}, sigkill);
}

CAF_TEST(a SIGKILLed node in the process group mode leaves no process) {
  auto v = check_nothing_outlives({"process-group"}, sigkill);
  CAF_CHECK_EQUAL(v.mode, "process_group");
}

CAF_TEST(a SIGKILLed node only process(subreaper) leaves no process) {
  check_nothing_outlives({"reap-all", "process-group"}, sigkill);
  check_nothing_outlives({"reap-all"}, sigkill);
}

CAF_TEST(a Ctrl - C to the process group of the node spares the watchdog) {
  // The helper leads its own process group, as a CLI in a shell job does;
  // SIGINT to that group ends the node, and the watchdog (in a session of
  // its own) ends what the node started.
  auto group_sigint = [](pid_t node) { ::kill(-node, SIGINT); };
  check_nothing_outlives({"process-group"}, group_sigint);
  check_nothing_outlives({}, group_sigint);
}

CAF_TEST(in the cgroup mode a setsid escaper ends with the node too) {
  temp_dir probe;
  live_process helper{{SANDBOX_TEST_NODE_HOST, "die", probe.path}};
  victim v;
  CAF_REQUIRE(read_until_ready(helper, v));
  helper.kill(SIGKILL);
  if (v.mode != "cgroup") {
    CAF_MESSAGE("no writable cgroup v2 here: the cgroup mode is not tested");
    return;
  }
  auto dead = check_nothing_outlives({"escape"}, sigkill);
  // The process's cgroup directory stays behind (the watchdog only kills);
  // the next node on the host removes it. That may be a node of another
  // suite running beside this one, before our own call does.
  CAF_REQUIRE(!dead.cgroup.empty());
  struct stat st;
  auto own = dead.cgroup.substr(0, dead.cgroup.rfind('/'));
  auto removed = sandbox::remove_dead_cgroups(own);
  bool gone = ::stat(dead.cgroup.c_str(), &st) != 0;
  if (removed == 0 && gone)
    CAF_MESSAGE("another node on the host removed " << dead.cgroup);
  CAF_CHECK(gone);
}

CAF_TEST(the watchdog writes to cgroup.kill of every watched cgroup) {
  temp_dir dir;
  auto keep = dir.path + "/keep";
  auto forget = dir.path + "/forget";
  for (auto& d : {keep, forget}) {
    ::mkdir(d.c_str(), 0755);
    std::ofstream{d + "/cgroup.kill"};
  }
  live_process helper{{SANDBOX_TEST_NODE_HOST, "cgroups", keep, forget}};
  victim v;
  CAF_REQUIRE(read_until_ready(helper, v));
  CAF_REQUIRE_GREATER(v.watchdog, 0);
  auto fds = open_pidfds({v.watchdog});
  CAF_REQUIRE_GREATER_OR_EQUAL(fds.front(), 0);
  helper.kill(SIGKILL);
  // The watchdog writes before it exits.
  CAF_REQUIRE_EQUAL(still_running_after(std::move(fds), 2000ms), 0u);
  CAF_CHECK_EQUAL(sandbox::test::slurp_file(keep + "/cgroup.kill"), "1");
  CAF_CHECK_EQUAL(sandbox::test::slurp_file(forget + "/cgroup.kill"), "");
}
