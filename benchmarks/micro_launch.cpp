// Micro-benchmarks of the launch: start `/bin/true` and reap it. The
// baseline is a raw posix_spawn of the same program with the same three
// pipes, measured in the same run, so the figures read as a ratio.
// `BM_launch_cgroup` adds what the cgroup mode adds per execution: the
// execution's cgroup made before (mkdir) and removed after (rmdir).

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>

#include <benchmark/benchmark.h>

#include "sandbox/cgroup.hpp"
#include "sandbox/launcher.hpp"

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

void reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
}

void BM_posix_spawn_baseline(benchmark::State& state) {
  char* argv[] = {const_cast<char*>("true"), nullptr};
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
}
BENCHMARK(BM_posix_spawn_baseline)->UseRealTime();

void launch_loop(benchmark::State& state, bool fallback,
                 sandbox::cgroup_tree* tree) {
  sandbox::force_clone_fallback(fallback);
  auto spec = true_spec();
  uint64_t n = 0;
  for (auto _ : state) {
    if (tree) {
      auto dir = tree->make_execution("bench", ++n);
      if (!dir) {
        state.SkipWithError(dir.error().message.c_str());
        break;
      }
      spec.cgroup = *dir;
    }
    auto c = sandbox::launch(spec);
    if (!c) {
      state.SkipWithError(c.error().message.c_str());
      break;
    }
    reap(c->pid);
    if (tree)
      ::rmdir(spec.cgroup.c_str());
  }
  sandbox::force_clone_fallback(false);
  state.SetLabel(std::string{sandbox::launch_method()});
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

} // namespace
