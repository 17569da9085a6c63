#pragma once

// Suites of contained sessions run only where the host can give them; a
// skip says what is missing. Include after caf/test/unit_test.hpp.

#include "sandbox/contain/isolation.hpp"

namespace sandbox::test {

inline bool host_can_contain() {
  auto missing = sandbox::host_isolation().missing();
  if (!missing.empty())
    CAF_MESSAGE(
      "skipped: this host cannot give contained sessions: " << missing);
  return missing.empty();
}

} // namespace sandbox::test
