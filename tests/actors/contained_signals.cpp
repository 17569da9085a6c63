#define CAF_SUITE actors.contained_signals
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Signals of a contained command (docs/security.md, "Signals"): with
// Landlock's signal scope (ABI 6) a command signals only the processes of
// its own execution. Another execution's, the init and a child the node
// launches but has not executed yet are refused, and the refusal reported:
// a command can no longer stop the node's launching thread by stopping a
// child between its clone and its exec (reliability A5).

#include <fstream>

#include "contained_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/violations.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::isolation_mode;
using sandbox::violation_kind;
using sandbox::actors::blocking_session;
using sandbox::actors::session_config;
using sandbox::test::has_detail_part;
using sandbox::test::host_can_contain;

namespace {

/// Whether this host scopes signals (Landlock ABI 6); says why not.
bool host_scopes_signals() {
  if (!host_can_contain())
    return false;
  auto abi = sandbox::host_isolation().landlock_abi;
  if (abi < 6) {
    CAF_MESSAGE("skipped: Landlock ABI " << abi << " has no signal scope (6)");
    return false;
  }
  return true;
}

struct fixture : sandbox::test::contained_fixture {
  std::optional<blocking_session> s;

  fixture() {
    start();
    if (node)
      s.emplace(make_session());
  }

  ~fixture() {
    if (s)
      (void) s->stop();
  }

  sandbox::exec_result run(const std::string& cmd) {
    return contained_fixture::run(*s, cmd);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(contained_signals_tests, fixture)

CAF_TEST(a process of another execution cannot be stopped and it is reported) {
  if (!host_scopes_signals())
    return;
  // Execution 1 leaves a process behind; execution 2 aims at it.
  auto bg = run("sleep 300 > /dev/null 2>&1 & echo $!");
  CAF_REQUIRE_EQUAL(bg.exit_code, 0);
  auto pid = bg.stdout_data.substr(0, bg.stdout_data.find('\n'));
  auto r = run("kill -STOP " + pid + "; echo $?");
  CAF_CHECK_EQUAL(r.stdout_data, "1\n");
  CAF_CHECK(
    has_detail_part(r.violations, violation_kind::signal_denied,
                    "kill " + pid + " (not a process of this execution)"));
  // The process still runs, and was not stopped.
  auto state = run("cat /proc/" + pid + "/stat");
  CAF_CHECK(state.stdout_data.find(") S ") != std::string::npos);
  // Its own execution's processes: signalled, nothing reported.
  auto own = run("sleep 30 & p=$!; kill -TERM $p; wait $p; echo $?");
  CAF_CHECK_EQUAL(own.stdout_data, "143\n");
  CAF_CHECK(own.violations.empty());
}

CAF_TEST(the init cannot be signalled and it is reported) {
  if (!host_scopes_signals())
    return;
  auto r = run("kill -STOP 1; echo $?");
  CAF_CHECK_EQUAL(r.stdout_data, "1\n");
  CAF_CHECK(has_detail_part(r.violations, violation_kind::signal_denied,
                            "kill 1 (not a process of this execution)"));
}

CAF_TEST(a process stopping every new pid holds no launch) {
  if (!host_scopes_signals())
    return;
  // The attack of reliability A5: a process of the session stops every
  // process that appears in its PID namespace, a child between its clone
  // and its exec among them. It counts the refusals.
  std::ofstream{dir.path + "/work/stopper.py"} << R"(
import os, signal, sys
me = os.getpid()
seen = set(os.listdir('/proc'))
refused = 0
try:
    os.kill(1, signal.SIGSTOP)
except PermissionError:
    refused += 1
while not os.path.exists('done'):
    for p in os.listdir('/proc'):
        if p.isdigit() and p not in seen and int(p) != me:
            seen.add(p)
            try:
                os.kill(int(p), signal.SIGSTOP)
            except PermissionError:
                refused += 1
            except OSError:
                pass
with open('refused', 'w') as f:
    f.write(str(refused))
)";
  auto start = run("python3 stopper.py > /dev/null 2>&1 &");
  CAF_REQUIRE_EQUAL(start.exit_code, 0);
  // Every launch completes (before the scope, one of them hung for good).
  for (int i = 0; i < 20; ++i) {
    auto r = run("echo " + std::to_string(i));
    CAF_CHECK_EQUAL(r.stdout_data, std::to_string(i) + "\n");
  }
  // The stopper writes its count once it sees `done` (bounded: a stopper
  // that died leaves the count empty, and the check below fails).
  auto done = run("touch done; for i in $(seq 400); do [ -e refused ] && "
                  "break; sleep 0.05; done; cat refused");
  CAF_CHECK(!done.stdout_data.empty());
  CAF_CHECK_NOT_EQUAL(done.stdout_data, "0");
  auto seen = s->violations();
  SANDBOX_REQUIRE_OK(seen);
  CAF_CHECK(has_detail_part(*seen, violation_kind::signal_denied,
                            "(not a process of this execution)"));
}

CAF_TEST_FIXTURE_SCOPE_END()
