#define CAF_SUITE actors.leaks
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"
#include "helpers/scale.hpp"

#include "fixture.hpp"

using sandbox::resident_bytes;

CAF_TEST_FIXTURE_SCOPE(leak_tests, sandbox::test::node_fixture)

CAF_TEST(1000 sequential executions leave the fd count unchanged) {
  auto s = make_session();
  // Warm up: the first executions create the reactor's and CAF's lazily
  // allocated descriptors.
  for (int i = 0; i < 20; ++i)
    SANDBOX_REQUIRE_OK(s.execute("true"));
  auto before = sandbox::test::plumbing_fds();
  for (int i = 0; i < 1000; ++i) {
    auto r = s.execute(i % 3 == 0 ? "echo out; echo err >&2" : "true");
    SANDBOX_REQUIRE_OK(r);
  }
  CAF_CHECK_EQUAL(sandbox::test::leaked_fds(before), "");
  CAF_CHECK_EQUAL(sandbox::test::zombie_children(), 0u);
}

// 256 MiB per commit, 1 GiB in `make test-stress`: either is four times
// the bound or more, so output held in memory fails both.
CAF_TEST(S9 a large output streams through with bounded memory) {
  SANDBOX_SKIP_MEMORY_TEST_IF_SANITIZED();
  const uint64_t total = sandbox::test::sized<uint64_t>(256u << 20, 1u << 30);
  auto s = make_session();
  SANDBOX_REQUIRE_OK(s.execute("true"));
  auto before = resident_bytes();
  size_t peak = before;
  uint64_t streamed = 0;
  uint64_t chunks = 0;
  auto r = s.execute_streaming(std::string{sandbox::test::test_child()}
                                 + " emit " + std::to_string(total),
                               {}, [&](const sandbox::output_chunk& c) {
                                 streamed += c.data.size();
                                 if (++chunks % 256 == 0)
                                   peak = std::max(peak, resident_bytes());
                               });
  SANDBOX_REQUIRE_OK(r);
  peak = std::max(peak, resident_bytes());
  CAF_CHECK_EQUAL(streamed, total);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  CAF_CHECK(r->truncated);
  // The retained head and tail (16 MiB) count against the budget too.
  SANDBOX_CHECK_MEMORY_BOUND(peak - before, 64u << 20);
  CAF_MESSAGE("resident growth: " << (peak - before) / 1024 << " KiB");
}

CAF_TEST(a timed out execution leaves no descriptor behind) {
  auto s = make_session();
  SANDBOX_REQUIRE_OK(s.execute("true"));
  auto before = sandbox::test::plumbing_fds();
  sandbox::exec_options opts;
  opts.timeout = std::chrono::milliseconds{100};
  for (int i = 0; i < 10; ++i) {
    auto r = s.execute("sleep 30 & setsid sleep 30 & wait", opts);
    SANDBOX_REQUIRE_OK(r);
    CAF_CHECK_EQUAL(r->exit_code, 124);
  }
  // A timed out execution's cgroup goes with its stop, and the descriptors
  // the session held it by; the next execution's is held again, as the
  // first's was at `before`.
  SANDBOX_REQUIRE_OK(s.execute("true"));
  CAF_CHECK_EQUAL(sandbox::test::leaked_fds(before), "");
  CAF_CHECK_EQUAL(sandbox::test::processes_with(marker(s)), 0u);
}

CAF_TEST_FIXTURE_SCOPE_END()
