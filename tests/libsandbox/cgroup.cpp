#define CAF_SUITE libsandbox.cgroup
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"
#include "helpers/read_to_end.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "helpers/temp_dir.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/detail/tsan.hpp"
#include "sandbox/process/launcher.hpp"
#include "sandbox/process/process_tree.hpp"

using sandbox::cgroup_tree;
using sandbox::errc;
using sandbox::find_own_cgroup;

namespace {

/// The launch paths to test: clone3, then libc's clone. ThreadSanitizer's
/// interceptor of libc's clone expects a fork and cannot follow the
/// fallback's CLONE_VM | CLONE_VFORK child (it fails an internal CHECK), so
/// a TSan build tests clone3 only; the other builds test both.
std::vector<bool> launch_paths() {
#ifdef SANDBOX_TSAN
  return {false};
#else
  return {false, true};
#endif
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

sandbox::launch_spec shell(std::string command) {
  sandbox::launch_spec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", std::move(command)};
  spec.cwd = "/";
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  return spec;
}

/// Reaps `pid`; the raw wait status.
int reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return status;
}

/// Runs `spec` to its end; its stdout and wait status.
std::pair<std::string, int> run(const sandbox::launch_spec& spec) {
  auto c = sandbox::launch(spec);
  if (!c)
    CAF_FAIL("launch failed: " << c.error().message);
  auto out = sandbox::test::read_to_end(c->stdout_r.get());
  return {out, reap(c->pid)};
}

/// The node tree of this test, or null (with a message) where cgroup v2 is
/// not writable (a CI container): the cgroup tests then check nothing.
std::unique_ptr<cgroup_tree> tree_or_skip() {
  auto t = cgroup_tree::create();
  if (!t) {
    CAF_MESSAGE("cgroup mode unavailable, skipped: " << t.error().message);
    return nullptr;
  }
  return std::move(*t);
}

const char* mountinfo = "24 1 0:22 / / rw - ext4 /dev/root rw\n"
                        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - "
                        "cgroup2 cgroup2 rw\n";

} // namespace

CAF_TEST(the own cgroup is the cgroup2 mount point plus the 0 line) {
  auto own = find_own_cgroup(mountinfo, "1:cpu:/\n0::/user.slice/a b\n");
  SANDBOX_REQUIRE_OK(own);
  CAF_CHECK_EQUAL(*own, "/sys/fs/cgroup/unified/user.slice/a b");
  auto root = find_own_cgroup(mountinfo, "0::/\n");
  SANDBOX_REQUIRE_OK(root);
  CAF_CHECK_EQUAL(*root, "/sys/fs/cgroup/unified");
}

CAF_TEST(a cgroup2 mount of a subtree is followed and escapes are decoded) {
  auto info = "50 1 0:40 /ns /sys/fs/my\\040cgroup rw - cgroup2 none rw\n";
  auto own = find_own_cgroup(info, "0::/ns/job\n");
  SANDBOX_REQUIRE_OK(own);
  CAF_CHECK_EQUAL(*own, "/sys/fs/my cgroup/job");
  auto outside = find_own_cgroup(info, "0::/other\n");
  CAF_REQUIRE(!outside);
  CAF_CHECK(outside.error().code == errc::unsupported);
  CAF_CHECK(outside.error().message.find("/other") != std::string::npos);
}

CAF_TEST(no cgroup2 mount or no 0 line means the cgroup mode is unsupported) {
  auto none = find_own_cgroup("24 1 0:22 / / rw - ext4 /dev/root rw\n",
                              "0::/\n");
  CAF_REQUIRE(!none);
  CAF_CHECK(none.error().code == errc::unsupported);
  auto v1 = find_own_cgroup(mountinfo, "1:cpu:/\n");
  CAF_REQUIRE(!v1);
  CAF_CHECK(v1.error().message.find("0::") != std::string::npos);
}

CAF_TEST(a node tree lives below the own cgroup and goes with its owner) {
  auto tree = tree_or_skip();
  if (!tree)
    return;
  auto root = tree->node_root();
  auto process = tree->process_root();
  CAF_CHECK_EQUAL(
    process.rfind(tree->own() + "/sandbox-" + std::to_string(::getpid()) + "-",
                  0),
    0u);
  CAF_CHECK_EQUAL(root.rfind(process + "/n-", 0), 0u);
  auto exec = tree->make_execution("sid", 7);
  SANDBOX_REQUIRE_OK(exec);
  CAF_CHECK_EQUAL(*exec, root + "/s-sid/e-7");
  CAF_CHECK(exists(*exec + "/cgroup.kill"));
  // A second node of the process has a tree of its own.
  auto other = cgroup_tree::create();
  SANDBOX_REQUIRE_OK(other);
  CAF_CHECK_NOT_EQUAL((*other)->node_root(), root);
  other->reset();
  CAF_CHECK(exists(root));
  auto bad = tree->make_execution("../x", 1);
  CAF_REQUIRE(!bad);
  CAF_CHECK(bad.error().code == errc::invalid_argument);
  tree.reset();
  CAF_CHECK(!exists(root));
  CAF_CHECK(!exists(process));
}

CAF_TEST(children are born in their cgroup on both launch paths) {
  auto tree = tree_or_skip();
  if (!tree)
    return;
  for (bool fallback : launch_paths()) {
    sandbox::force_clone_fallback(fallback);
    CAF_MESSAGE("launch method " << sandbox::launch_method());
    auto exec = tree->make_execution("born", fallback ? 2 : 1);
    SANDBOX_REQUIRE_OK(exec);
    auto spec = shell("cat /proc/self/cgroup");
    spec.cgroup = *exec;
    auto [out, status] = run(spec);
    CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    auto rel = exec->substr(tree->own().size());
    auto own = find_own_cgroup();
    SANDBOX_REQUIRE_OK(own);
    if (tree->own() == *own)
      CAF_CHECK(out.find("0::" + rel + "\n") != std::string::npos
                || out.find("0::/" + rel.substr(rel.find("sandbox-")))
                     != std::string::npos);
    // cgroup.events says empty once the child is gone.
    auto populated = sandbox::cgroup_populated(*exec);
    SANDBOX_REQUIRE_OK(populated);
    CAF_CHECK(!*populated);
  }
  sandbox::force_clone_fallback(false);
}

CAF_TEST(a child starts with default signals an empty mask and no extra fds) {
  // The node ignores SIGPIPE and blocks signals in threads; none of it may
  // reach a child (nor glibc's internal signals 32 and 33). The child
  // resets what its /proc/self/status names as ignored or caught: one
  // ignored signal in each half of the mask, and a caught one.
  auto old = ::signal(SIGPIPE, SIG_IGN);
  auto old_high = ::signal(SIGRTMIN + 8, SIG_IGN);
  auto old_usr2 = ::signal(SIGUSR2, [](int) {});
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  sigset_t saved;
  ::pthread_sigmask(SIG_BLOCK, &block, &saved);
  for (bool fallback : launch_paths()) {
    sandbox::force_clone_fallback(fallback);
    auto [out, status] = run(
      shell("grep -E '^Sig(Ign|Blk)' /proc/self/status; ls /proc/self/fd"));
    CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CAF_CHECK(out.find("SigBlk:\t0000000000000000\n") != std::string::npos);
    CAF_CHECK(out.find("SigIgn:\t0000000000000000\n") != std::string::npos);
    // 0, 1, 2 and the descriptor ls reads /proc/self/fd with.
    CAF_CHECK_EQUAL(out.substr(out.find("\n0\n") + 1), "0\n1\n2\n3\n");
  }
  sandbox::force_clone_fallback(false);
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  ::signal(SIGUSR2, old_usr2);
  ::signal(SIGRTMIN + 8, old_high);
  ::signal(SIGPIPE, old);
}

CAF_TEST(a child 's stdin is the caller' s dev null which stays open) {
  sandbox::unique_fd null{::open("/dev/null", O_RDONLY | O_CLOEXEC)};
  CAF_REQUIRE(null.get() > 2);
  for (bool fallback : launch_paths()) {
    sandbox::force_clone_fallback(fallback);
    // The caller's descriptor (the node keeps one for all its launches),
    // and 0 (a host without stdin): the launch then opens its own.
    for (int given : {null.get(), 0}) {
      auto spec = shell("readlink /proc/self/fd/0; cat; ls /proc/self/fd");
      spec.dev_null = given;
      auto [out, status] = run(spec);
      CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      CAF_CHECK_EQUAL(out.substr(0, out.find('\n') + 1), "/dev/null\n");
      CAF_CHECK_EQUAL(out.substr(out.find("\n0\n") + 1), "0\n1\n2\n3\n");
    }
  }
  sandbox::force_clone_fallback(false);
  CAF_CHECK(::fcntl(null.get(), F_GETFD) == FD_CLOEXEC);
}

CAF_TEST(exec and cwd failures are reported on both launch paths) {
  for (bool fallback : launch_paths()) {
    sandbox::force_clone_fallback(fallback);
    auto spec = shell("true");
    spec.executable = "/nonexistent/program";
    auto missing = sandbox::launch(spec);
    CAF_REQUIRE(!missing);
    CAF_CHECK(missing.error().code == errc::path_not_found);
    CAF_CHECK_EQUAL(missing.error().message,
                    "cannot start /nonexistent/program: No such file or "
                    "directory");
    // A file without any execute bit: EACCES, even for root.
    sandbox::test::temp_dir dir;
    auto path = dir.at("noexec");
    ::close(::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    spec = shell("true");
    spec.executable = path;
    auto denied = sandbox::launch(spec);
    CAF_REQUIRE(!denied);
    CAF_CHECK(denied.error().code == errc::permission_denied);
    CAF_CHECK_EQUAL(denied.error().message, std::string{"cannot start "} + path
                                              + ": Permission denied");
    // The working directory is checked by the child's chdir alone (no
    // stat before each launch); each failure is still named.
    spec = shell("true");
    spec.cwd = dir.at("missing");
    auto gone = sandbox::launch(spec);
    CAF_REQUIRE(!gone);
    CAF_CHECK(gone.error().code == errc::path_not_found);
    CAF_CHECK_EQUAL(gone.error().message,
                    "working directory does not exist: " + spec.cwd);
    spec.cwd = path;
    auto file = sandbox::launch(spec);
    CAF_REQUIRE(!file);
    CAF_CHECK(file.error().code == errc::path_not_found);
    CAF_CHECK_EQUAL(file.error().message,
                    "working directory is not a directory: " + path);
    spec.cwd = path + "/below";
    auto below = sandbox::launch(spec);
    CAF_REQUIRE(!below);
    CAF_CHECK(below.error().code == errc::path_not_found);
    CAF_CHECK_EQUAL(below.error().message,
                    "working directory does not exist: " + spec.cwd);
  }
  sandbox::force_clone_fallback(false);
}

CAF_TEST(a child dies with the thread that launched it) {
  sandbox::launched_child child;
  std::thread{[&] {
    auto c = sandbox::launch(shell("exec sleep 30"));
    if (c)
      child = std::move(*c);
  }}.join();
  CAF_REQUIRE(child.pid > 0);
  pollfd p{child.pidfd.get(), POLLIN, 0};
  CAF_REQUIRE_EQUAL(::poll(&p, 1, 10000), 1);
  auto status = reap(child.pid);
  CAF_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

CAF_TEST(kill and remove ends a tree that left its process group) {
  auto tree = tree_or_skip();
  if (!tree)
    return;
  auto exec = tree->make_execution("kill", 1);
  SANDBOX_REQUIRE_OK(exec);
  // The escaper lets go of the output pipe, so that `run` sees its end.
  auto spec = shell("(setsid env -i sleep 300 >/dev/null 2>&1 &); "
                    "echo started");
  spec.cgroup = *exec;
  auto [out, status] = run(spec);
  CAF_CHECK_EQUAL(out, "started\n");
  auto members = sandbox::cgroup_members(tree->node_root());
  CAF_CHECK_EQUAL(members.size(), 1u);
  auto populated = sandbox::cgroup_populated(tree->session_path("kill"));
  CAF_CHECK(populated && *populated);
  auto done = sandbox::cgroup_kill_and_remove(tree->session_path("kill"),
                                              std::chrono::seconds{5});
  SANDBOX_CHECK_OK(done);
  CAF_CHECK(!exists(*exec));
  CAF_CHECK(!exists(tree->session_path("kill")));
  // Exited (populated 0 came after the exit): at most a zombie of init's
  // until it is reaped.
  for (auto& e : sandbox::proc_snapshot())
    for (auto pid : members)
      if (e.pid == pid)
        CAF_CHECK(e.zombie());
}

CAF_TEST(
  a held cgroup reads its state in place and is where children are born) {
  auto tree = tree_or_skip();
  if (!tree)
    return;
  auto exec = tree->make_execution("held", 1);
  SANDBOX_REQUIRE_OK(exec);
  auto held = sandbox::held_cgroup::open(*exec);
  SANDBOX_REQUIRE_OK(held);
  CAF_CHECK_EQUAL((*held)->path(), *exec);
  auto empty = (*held)->populated();
  SANDBOX_REQUIRE_OK(empty);
  CAF_CHECK(!*empty);
  for (bool fallback : launch_paths()) {
    sandbox::force_clone_fallback(fallback);
    CAF_MESSAGE("launch method " << sandbox::launch_method());
    // Born in the held directory, which the launch does not look up: the
    // path given beside it is one that does not exist.
    auto spec = shell("(sleep 300 >/dev/null 2>&1 &); cat /proc/self/cgroup");
    spec.cgroup_held = *held;
    spec.cgroup = fallback ? *exec : *exec + "-not-there";
    auto [out, status] = run(spec);
    CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CAF_CHECK(out.find(exec->substr(exec->rfind("/sandbox-")) + "\n")
              != std::string::npos);
    // The same descriptor read again shows the state of now.
    auto busy = (*held)->populated();
    SANDBOX_REQUIRE_OK(busy);
    CAF_CHECK(*busy);
    SANDBOX_REQUIRE_OK(sandbox::cgroup_kill(*exec));
    for (;;) {
      auto p = (*held)->populated();
      SANDBOX_REQUIRE_OK(p);
      if (!*p)
        break;
      std::this_thread::yield();
    }
  }
  sandbox::force_clone_fallback(false);
  // Removed: its state can no longer be read, and the error names it.
  SANDBOX_REQUIRE_OK(sandbox::cgroup_remove(*exec));
  auto gone = (*held)->populated();
  CAF_REQUIRE(!gone);
  CAF_CHECK(gone.error().message.find(*exec + "/cgroup.events")
            != std::string::npos);
  auto missing = sandbox::held_cgroup::open(*exec);
  CAF_REQUIRE(!missing);
  CAF_CHECK(missing.error().code == errc::path_not_found);
  CAF_CHECK(missing.error().message.find(*exec) != std::string::npos);
  SANDBOX_CHECK_OK(sandbox::cgroup_kill_and_remove(tree->session_path("held"),
                                                   std::chrono::seconds{5}));
}

CAF_TEST(a budget holds so many cgroups open and the rest by their path) {
  auto tree = tree_or_skip();
  if (!tree)
    return;
  auto budget = std::make_shared<sandbox::held_cgroup_budget>(3);
  auto first_dir = tree->make_execution("budget", 1);
  auto second_dir = tree->make_execution("budget", 2);
  SANDBOX_REQUIRE_OK(first_dir);
  SANDBOX_REQUIRE_OK(second_dir);
  auto first = sandbox::held_cgroup::open(*first_dir, budget);
  SANDBOX_REQUIRE_OK(first);
  CAF_CHECK((*first)->dir_fd() >= 0);
  // One descriptor left: the second is held by its path, and serves the
  // same way.
  auto second = sandbox::held_cgroup::open(*second_dir, budget);
  SANDBOX_REQUIRE_OK(second);
  CAF_CHECK_EQUAL((*second)->dir_fd(), -1);
  auto spec = shell("cat /proc/self/cgroup");
  spec.cgroup = *second_dir;
  spec.cgroup_held = *second;
  auto [out, status] = run(spec);
  CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CAF_CHECK(out.find(second_dir->substr(second_dir->rfind("/sandbox-")) + "\n")
            != std::string::npos);
  auto empty = (*second)->populated();
  SANDBOX_REQUIRE_OK(empty);
  CAF_CHECK(!*empty);
  // A failed open gives its descriptors back; so does the end of a held
  // one.
  auto two = std::make_shared<sandbox::held_cgroup_budget>(2);
  auto missing = sandbox::held_cgroup::open(*first_dir + "-not-there", two);
  CAF_REQUIRE(!missing);
  CAF_CHECK(missing.error().code == errc::path_not_found);
  CAF_CHECK(two->take(2));
  first->reset();
  auto again = sandbox::held_cgroup::open(*second_dir, budget);
  SANDBOX_REQUIRE_OK(again);
  CAF_CHECK((*again)->dir_fd() >= 0);
  CAF_CHECK(!budget->take(2));
  CAF_CHECK(budget->take(1));
  SANDBOX_CHECK_OK(sandbox::cgroup_kill_and_remove(tree->session_path("budget"),
                                                   std::chrono::seconds{5}));
}

CAF_TEST(a pool keeps empty cgroups and leaves busy ones) {
  auto tree = tree_or_skip();
  if (!tree)
    return;
  sandbox::cgroup_pool pool{1};
  CAF_CHECK(pool.take() == nullptr);
  auto held = [&](uint64_t n) {
    auto dir = tree->make_execution("pool", n);
    SANDBOX_REQUIRE_OK(dir);
    auto h = sandbox::held_cgroup::open(*dir);
    SANDBOX_REQUIRE_OK(h);
    return *h;
  };
  auto first = held(1);
  auto second = held(2);
  auto busy = held(3);
  // An execution that ended with nothing left: kept, and handed out again.
  auto [out, status] = run([&] {
    auto spec = shell("true");
    spec.cgroup = first->path();
    spec.cgroup_held = first;
    return spec;
  }());
  CAF_CHECK(WIFEXITED(status));
  pool.give_back(first);
  CAF_CHECK_EQUAL(pool.idle(), 1u);
  // Full: an empty one goes.
  pool.give_back(second);
  CAF_CHECK_EQUAL(pool.idle(), 1u);
  CAF_CHECK(!exists(second->path()));
  // One that a background process holds stays, outside the pool.
  auto spec = shell("(sleep 300 >/dev/null 2>&1 &); echo started");
  spec.cgroup = busy->path();
  spec.cgroup_held = busy;
  auto [started, st2] = run(spec);
  CAF_CHECK_EQUAL(started, "started\n");
  CAF_CHECK(pool.take() == first);
  pool.give_back(busy);
  CAF_CHECK_EQUAL(pool.idle(), 0u);
  CAF_CHECK(exists(busy->path()));
  // Closed (the session stops): nothing is kept, an empty one goes.
  pool.close();
  pool.give_back(first);
  CAF_CHECK_EQUAL(pool.idle(), 0u);
  CAF_CHECK(!exists(first->path()));
  // A directory already gone is forgotten; so is nothing.
  pool.give_back(second);
  pool.give_back(nullptr);
  CAF_CHECK_EQUAL(pool.idle(), 0u);
  SANDBOX_CHECK_OK(sandbox::cgroup_kill_and_remove(tree->session_path("pool"),
                                                   std::chrono::seconds{5}));
}
