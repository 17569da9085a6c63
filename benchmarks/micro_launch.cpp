// Micro-benchmarks of the launch: start `/bin/true` and reap it. The
// baseline is a raw posix_spawn of the same program with the same three
// pipes, measured in the same run, so the figures read as a ratio.
// `BM_launch_cgroup` adds what the cgroup mode adds per execution: the
// execution's cgroup made before (mkdir) and removed after (rmdir);
// `BM_launch_cgroup_reused` launches into one cgroup kept for the loop,
// checked empty before each launch, what a reuse of emptied execution
// cgroups per session would cost instead.
// `BM_launch_contained/<steps>` launches into a contained session (its init
// made once, before the loop) with some of a contained command's steps, so
// that the differences tell what each step costs: 0 enters the namespaces
// only (setns on the init's pidfd, the second clone, no new privileges),
// 1 adds the rlimits, 2 Landlock, 3 the seccomp filter and its listener
// (every step, as the node launches a contained command).
// `BM_contained_session` starts and ends a contained session's init.

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>

#include <benchmark/benchmark.h>

#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/contain/contained_session.hpp"
#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/process/launcher.hpp"

extern char** environ;

namespace {

sandbox::launch_spec true_spec() {
  sandbox::launch_spec spec;
  spec.executable = "/bin/true";
  spec.argv = {"true"};
  spec.cwd = "/";
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  return spec;
}

/// CPU seconds of the reaped children so far.
double children_cpu() {
  rusage u{};
  ::getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec)
         + static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/// Reports the children's CPU per launch since `start` (µs): what a busy
/// machine cannot inflate the way it inflates wall time.
void child_cpu_counter(benchmark::State& state, double start) {
  if (state.iterations() > 0)
    state.counters["child_cpu_us"] = (children_cpu() - start) * 1e6
                                     / static_cast<double>(state.iterations());
}

void reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
}

/// Launches `spec` and reaps it; false (the benchmark skipped with the
/// error) when the launch fails.
bool launch_and_reap(benchmark::State& state,
                     const sandbox::launch_spec& spec) {
  auto c = sandbox::launch(spec);
  if (!c) {
    state.SkipWithError(c.error().message.c_str());
    return false;
  }
  reap(c->pid);
  return true;
}

void BM_posix_spawn_baseline(benchmark::State& state) {
  char* argv[] = {const_cast<char*>("true"), nullptr};
  auto cpu0 = children_cpu();
  for (auto _ : state) {
    int out[2];
    int err[2];
    ::pipe2(out, O_CLOEXEC);
    ::pipe2(err, O_CLOEXEC);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    pid_t pid = -1;
    ::posix_spawn(&pid, "/bin/true", &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    for (int fd : {out[0], out[1], err[0], err[1]})
      ::close(fd);
    reap(pid);
  }
  child_cpu_counter(state, cpu0);
}
BENCHMARK(BM_posix_spawn_baseline)->UseRealTime();

void launch_loop(benchmark::State& state, bool fallback,
                 sandbox::cgroup_tree* tree) {
  sandbox::force_clone_fallback(fallback);
  state.SetLabel(std::string{sandbox::launch_method()});
  auto spec = true_spec();
  uint64_t n = 0;
  auto cpu0 = children_cpu();
  for (auto _ : state) {
    if (tree) {
      auto dir = tree->make_execution("bench", ++n);
      if (!dir) {
        state.SkipWithError(dir.error().message.c_str());
        break;
      }
      spec.cgroup = *dir;
    }
    if (!launch_and_reap(state, spec))
      break;
    if (tree)
      ::rmdir(spec.cgroup.c_str());
  }
  child_cpu_counter(state, cpu0);
  sandbox::force_clone_fallback(false);
}

void BM_launch(benchmark::State& state) {
  launch_loop(state, false, nullptr);
}
BENCHMARK(BM_launch)->UseRealTime();

void BM_launch_clone_fallback(benchmark::State& state) {
  launch_loop(state, true, nullptr);
}
BENCHMARK(BM_launch_clone_fallback)->UseRealTime();

void BM_launch_cgroup(benchmark::State& state) {
  auto tree = sandbox::cgroup_tree::create();
  if (!tree) {
    state.SkipWithError(tree.error().message.c_str());
    for (auto _ : state)
      ;
    return;
  }
  launch_loop(state, false, tree->get());
}
BENCHMARK(BM_launch_cgroup)->UseRealTime();

// What reusing an emptied execution cgroup costs instead, as a session
// does it: one cgroup made and held open before the loop (`held_cgroup`),
// and before each launch the check that it is empty (one `pread` of its
// `cgroup.events`), which a reuse cannot skip (a background process left
// in it would join the next execution).
void BM_launch_cgroup_reused(benchmark::State& state) {
  auto tree = sandbox::cgroup_tree::create();
  auto dir = tree ? (*tree)->make_execution("bench", 0)
                  : sandbox::result<std::string>{tree.error()};
  auto held = dir
                ? sandbox::held_cgroup::open(*dir)
                : sandbox::result<std::shared_ptr<const sandbox::held_cgroup>>{
                  dir.error()};
  if (!held) {
    state.SkipWithError(held.error().message.c_str());
    for (auto _ : state)
      ;
    return;
  }
  sandbox::force_clone_fallback(false);
  state.SetLabel(std::string{sandbox::launch_method()});
  auto spec = true_spec();
  spec.cgroup = *dir;
  spec.cgroup_held = *held;
  auto cpu0 = children_cpu();
  for (auto _ : state) {
    auto busy = (*held)->populated();
    if (!busy || *busy) {
      state.SkipWithError("the reused cgroup is not empty");
      break;
    }
    if (!launch_and_reap(state, spec))
      break;
  }
  child_cpu_counter(state, cpu0);
  held->reset();
  ::rmdir(spec.cgroup.c_str());
}
BENCHMARK(BM_launch_cgroup_reused)->UseRealTime();

void BM_launch_contained(benchmark::State& state) {
  auto missing = sandbox::host_isolation().missing();
  if (!missing.empty()) {
    state.SkipWithError(("this host lacks " + missing).c_str());
    for (auto _ : state)
      ;
    return;
  }
  char tmpl[] = "/tmp/sandbox-micro-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    state.SkipWithError("mkdtemp");
    for (auto _ : state)
      ;
    return;
  }
  sandbox::containment_spec cs;
  cs.working_directory = tmpl;
  cs.home_directory = tmpl;
  auto session = sandbox::contained_session::start(cs);
  if (!session) {
    state.SkipWithError(session.error().message.c_str());
    for (auto _ : state)
      ;
    ::rmdir(tmpl);
    return;
  }
  auto steps = state.range(0);
  auto spec = true_spec();
  spec.cwd = tmpl;
  auto& c = spec.contain;
  c.ns_pidfd = (*session)->init_pidfd();
  if (steps >= 1) {
    c.cpu_seconds = cs.limits.cpu_seconds;
    c.file_size = cs.limits.file_size;
    c.open_files = cs.limits.open_files;
  }
  if (steps >= 2)
    c.landlock_ruleset = (*session)->ruleset_fd();
  if (steps >= 3 && sandbox::host_isolation().syscall_watch)
    c.watch_filter = sandbox::watch_filter();
  auto cpu0 = children_cpu();
  for (auto _ : state) {
    if (!launch_and_reap(state, spec))
      break;
  }
  child_cpu_counter(state, cpu0);
  session->reset();
  ::rmdir(tmpl);
}
BENCHMARK(BM_launch_contained)->DenseRange(0, 3)->UseRealTime();

/// What a contained session's start costs at this level: its init (the
/// namespaces, the mounts, loopback) and its Landlock ruleset, then its end
/// (the destructor kills the init and reaps it).
void BM_contained_session(benchmark::State& state) {
  auto missing = sandbox::host_isolation().missing();
  char tmpl[] = "/tmp/sandbox-micro-XXXXXX";
  if (!missing.empty() || ::mkdtemp(tmpl) == nullptr) {
    state.SkipWithError(
      missing.empty() ? "mkdtemp" : ("this host lacks " + missing).c_str());
    for (auto _ : state)
      ;
    return;
  }
  sandbox::containment_spec cs;
  cs.working_directory = tmpl;
  cs.home_directory = tmpl;
  auto cpu0 = children_cpu();
  for (auto _ : state) {
    auto session = sandbox::contained_session::start(cs);
    if (!session) {
      state.SkipWithError(session.error().message.c_str());
      break;
    }
  }
  child_cpu_counter(state, cpu0);
  ::rmdir(tmpl);
}
BENCHMARK(BM_contained_session)->UseRealTime();

} // namespace
