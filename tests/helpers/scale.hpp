#pragma once

// The size of a stress property: per commit or full.
//
// A few suites check a property whose full size is a stress or soak run:
// one winner in each of 200 compare-and-swap rounds of 32 writers, a
// gibibyte through a session in bounded memory. `make test` runs each of
// them at a smaller size that still fails on the same regression (a lost
// round, memory that grows with the volume); `make test-stress` runs
// their `<area>.<suite>.stress` entries (ctest label `stress`,
// tests/CMakeLists.txt), which set SANDBOX_TEST_STRESS=1 for the full
// size. CONTRIBUTING.md ("Test") lists them.

#include <cstdlib>

namespace sandbox::test {

/// Whether this run is a stress entry (SANDBOX_TEST_STRESS=1).
inline bool stress_run() {
  static const bool stress = [] {
    const char* v = std::getenv("SANDBOX_TEST_STRESS");
    return v != nullptr && v[0] == '1' && v[1] == '\0';
  }();
  return stress;
}

/// `per_commit` in `make test`, `stress` in `make test-stress`.
template <class T>
T sized(T per_commit, T stress) {
  return stress_run() ? stress : per_commit;
}

} // namespace sandbox::test
