// The one translation unit of the actors test binary that holds main().
#define CAF_TEST_NO_MAIN
#include "caf/test/unit_test_impl.hpp"

#include "helpers/test_isolation.hpp"
#include "sandbox/actors/publish_accept.hpp"

int main(int argc, char** argv) {
  // actors.remote, actors.tls and actors.lifecycle publish nodes, as
  // `sandbox serve` does.
  sandbox::actors::renumber_node_connections();
  if (int status = sandbox::test::prepare_suite_isolation(); status >= 0)
    return status;
  return caf::test::main(argc, argv);
}
