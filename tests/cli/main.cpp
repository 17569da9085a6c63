// The one translation unit of the CLI test binary that holds main().
#define CAF_TEST_NO_MAIN
#include "caf/test/unit_test_impl.hpp"

#include "helpers/test_isolation.hpp"

int main(int argc, char** argv) {
  if (int status = sandbox::test::prepare_suite_isolation(); status >= 0)
    return status;
  return caf::test::main(argc, argv);
}
