#pragma once

// The isolation the actors and CLI suites run their sessions under.
//
// SANDBOX_TEST_ISOLATION=contained (the `<area>.<suite>.contained` ctest
// entries, tests/CMakeLists.txt) runs every session the suites make
// without choosing an isolation as a contained one: the actors suites'
// nodes get it as their default (`suite_runtime_config`), the CLI suites
// run the CLI with SANDBOX_ISOLATION=contained (and so every `sandbox
// serve` they start). Unset (or `none`): isolation `none`, as for a user
// who chooses nothing. A test that depends on what contained denies by
// design asks `contained_run()` and says why it differs.

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sandbox/contain/isolation.hpp"

namespace sandbox::test {

/// The isolation chosen by SANDBOX_TEST_ISOLATION (`none` when unset); an
/// unknown value ends the test program.
inline isolation_mode suite_isolation() {
  static const isolation_mode mode = [] {
    const char* v = std::getenv("SANDBOX_TEST_ISOLATION");
    if (v == nullptr || *v == '\0')
      return isolation_mode::none;
    auto parsed = parse_isolation(v);
    if (!parsed) {
      std::fprintf(stderr, "SANDBOX_TEST_ISOLATION: %s\n",
                   parsed.error().message.c_str());
      std::exit(2);
    }
    return *parsed;
  }();
  return mode;
}

/// Whether the suites run under `contained` (SANDBOX_TEST_ISOLATION).
inline bool contained_run() {
  return suite_isolation() == isolation_mode::contained;
}

/// The exit status of a test program run under `contained` on a host that
/// cannot give it: ctest counts the entry as skipped (SKIP_RETURN_CODE).
constexpr int skip_status = 77;

/// Called first by the test programs' main: -1 to run the suites, else
/// the status to exit with (the reason printed). Under `contained`, sets
/// SANDBOX_ISOLATION for every CLI the suites start.
inline int prepare_suite_isolation() {
  if (!contained_run())
    return -1;
  auto missing = host_isolation().missing();
  if (!missing.empty()) {
    std::printf("skipped: SANDBOX_TEST_ISOLATION=contained, but this host "
                "cannot give contained sessions: %s\n",
                missing.c_str());
    return skip_status;
  }
  ::setenv("SANDBOX_ISOLATION", "contained", 1);
  return -1;
}

} // namespace sandbox::test
