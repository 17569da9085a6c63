// What one thread hand-over costs on this machine: the price of every
// message between the node's threads and the caller's. Two threads pass a
// turn back and forth through a mutex and a condition variable (the way a
// CAF blocking actor waits for its answer and a scheduler thread for
// work). Argument 0: the threads run where the kernel puts them (the
// node's case); argument 1: both are pinned to one CPU, the baseline of
// the same run, where a wake-up needs no other CPU to be woken.

#include <pthread.h>
#include <sched.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include <benchmark/benchmark.h>

namespace {

/// Pins the calling thread to `cpu`; false where that is refused.
bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set) == 0;
}

void BM_handover_round_trip(benchmark::State& state) {
  const bool pinned = state.range(0) != 0;
  cpu_set_t saved;
  ::pthread_getaffinity_np(::pthread_self(), sizeof(saved), &saved);
  const int cpu = ::sched_getcpu();
  if (pinned && !pin_to(cpu)) {
    state.SkipWithError("cannot pin to one CPU");
    for (auto _ : state)
      ;
    return;
  }
  std::mutex mtx;
  std::condition_variable cv;
  // Whose turn it is: 1 the helper's, 0 the caller's, -1 the end.
  int turn = 0;
  std::thread helper{[&] {
    if (pinned)
      pin_to(cpu);
    std::unique_lock<std::mutex> lock{mtx};
    for (;;) {
      cv.wait(lock, [&] { return turn != 0; });
      if (turn < 0)
        return;
      turn = 0;
      cv.notify_all();
    }
  }};
  for (auto _ : state) {
    std::unique_lock<std::mutex> lock{mtx};
    turn = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return turn == 0; });
  }
  {
    std::lock_guard<std::mutex> lock{mtx};
    turn = -1;
  }
  cv.notify_all();
  helper.join();
  ::pthread_setaffinity_np(::pthread_self(), sizeof(saved), &saved);
}
BENCHMARK(BM_handover_round_trip)->DenseRange(0, 1)->UseRealTime();

} // namespace
