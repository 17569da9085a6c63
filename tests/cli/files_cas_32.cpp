#define CAF_SUITE cli.files_cas_32
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// `sandbox write --if-version V` in 32 separate processes at once, 200
// rounds (cli.files_cas has 2 and 8): a suite of its own, so that ctest
// runs it beside the others.

#include "cas_fixture.hpp"

using namespace sandbox::test;

CAF_TEST_FIXTURE_SCOPE(cli_files_cas_32_tests, cas_fixture)

CAF_TEST(write if - version in 32 processes has one winner per round) {
  run_rounds(32, cas_rounds(32));
}

CAF_TEST_FIXTURE_SCOPE_END()
