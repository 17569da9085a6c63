// Micro-benchmarks of the blocking facade's request: `blocking_session::
// info()`, which makes a scoped (blocking) actor for each call, against
// the same request from one blocking actor kept for the whole loop (what a
// facade that reused its blocking actor would cost). The difference is
// what reusing it could save per call; the session's own work is the same
// in both.

#include <benchmark/benchmark.h>

#include <caf/scoped_actor.hpp>

#include <cstdlib>
#include <filesystem>

#include "payload.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/fs/file_io.hpp"

namespace {

using namespace sandbox::actors;
using sandbox::isolation_mode;

/// A node and one session, for one run of a benchmark (not a static: the
/// node must end before CAF's own globals do).
struct bench_node {
  embedded_node node;
  blocking_session session;
  explicit bench_node(isolation_mode mode = isolation_mode::none)
    : session(open(node, mode)) {
  }
  ~bench_node() {
    (void) session.stop();
  }
  static blocking_session open(embedded_node& n, isolation_mode mode) {
    session_config cfg;
    cfg.isolation = mode;
    auto s = blocking_session::create(n, cfg);
    if (!s)
      throw std::runtime_error(s.error().message);
    return std::move(*s);
  }
};

void BM_facade_info(benchmark::State& state) {
  bench_node b;
  for (auto _ : state)
    if (!b.session.info()) {
      state.SkipWithError("info failed");
      break;
    }
}
BENCHMARK(BM_facade_info)->UseRealTime();

void BM_reused_actor_info(benchmark::State& state) {
  bench_node b;
  caf::scoped_actor self{b.node.system()};
  for (auto _ : state) {
    bool ok = false;
    self->request(b.session.handle(), caf::infinite, info_atom_v)
      .receive([&](session_info&) { ok = true; }, [](caf::error&) {});
    if (!ok) {
      state.SkipWithError("info failed");
      break;
    }
  }
}
BENCHMARK(BM_reused_actor_info)->UseRealTime();

// One execution of `true` through the facade, the path that
// `sandbox-load --only exec` measures at concurrency 1; run it under
// `strace -f -c` to count the node's system calls per execution. Argument
// 1: in a contained session (what scenario 11 compares), 0: none.
void BM_facade_exec_true(benchmark::State& state) {
  bench_node b{state.range(0) != 0 ? isolation_mode::contained
                                   : isolation_mode::none};
  for (auto _ : state)
    if (auto r = b.session.execute("true"); !r || r->exit_code != 0) {
      state.SkipWithError("execute failed");
      break;
    }
}
BENCHMARK(BM_facade_exec_true)->DenseRange(0, 1)->UseRealTime();

/// A scratch directory of its own with a 1 MiB file of varied bytes.
struct scratch_file {
  std::filesystem::path dir;
  std::string path;
  std::string data = sandbox::bench::make_payload(size_t{1} << 20);
  scratch_file() {
    char tmpl[] = "/tmp/sandbox-micro-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    path = (dir / "file.bin").string();
    if (!sandbox::fs::write_file(path, data))
      throw std::runtime_error("cannot write " + path);
  }
  ~scratch_file() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// Reading a 1 MiB file through the facade (`blocking_files::read_file`:
// the session's filesystem worker and the file pool), argument 1, against
// libsandbox's `fs::read_file` on the calling thread, argument 0: the
// difference is the actor path of one file request.
void BM_read_1mib(benchmark::State& state) {
  scratch_file f;
  bench_node b;
  auto files = sandbox::actors::files_of(b.session);
  for (auto _ : state) {
    auto r = state.range(0) != 0 ? files->read_file(f.path)
                                 : sandbox::fs::read_file(f.path);
    if (!r || r->size() != f.data.size()) {
      state.SkipWithError("read failed");
      break;
    }
  }
}
BENCHMARK(BM_read_1mib)->DenseRange(0, 1)->UseRealTime();

// As BM_read_1mib for the atomic write of 1 MiB (`write_file`: temp file
// + rename over the file).
void BM_write_1mib(benchmark::State& state) {
  scratch_file f;
  bench_node b;
  auto files = sandbox::actors::files_of(b.session);
  for (auto _ : state) {
    auto r = state.range(0) != 0 ? files->write_file(f.path, f.data)
                                 : sandbox::fs::write_file(f.path, f.data);
    if (!r) {
      state.SkipWithError("write failed");
      break;
    }
  }
}
BENCHMARK(BM_write_1mib)->DenseRange(0, 1)->UseRealTime();

} // namespace
