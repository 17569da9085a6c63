// The one translation unit of the CLI test binary that holds main().
#include "caf/test/unit_test_impl.hpp"
