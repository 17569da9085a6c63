// The one translation unit of the MCP test binary that holds main().
#include "caf/test/unit_test_impl.hpp"
