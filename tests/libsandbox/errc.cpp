#define CAF_SUITE libsandbox.errc
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <cerrno>

#include "sandbox/errc.hpp"

using sandbox::errc;

CAF_TEST(every error code has a name that parses back) {
  // The values cross the network: they are pinned.
  CAF_CHECK_EQUAL(static_cast<int>(errc::io_error), 12);
  CAF_CHECK_EQUAL(static_cast<int>(errc::node_unreachable), 13);
  for (int i = 0; i <= static_cast<int>(errc::node_unreachable); ++i) {
    auto code = static_cast<errc>(i);
    errc parsed = errc::none;
    CAF_CHECK(sandbox::from_string(sandbox::to_string(code), parsed));
    CAF_CHECK_EQUAL(static_cast<int>(parsed), i);
  }
  errc parsed = errc::none;
  CAF_CHECK(!sandbox::from_string("no_such_code", parsed));
}

CAF_TEST(errno values map to the closest code) {
  CAF_CHECK(sandbox::errc_from_errno(ENOENT) == errc::path_not_found);
  CAF_CHECK(sandbox::errc_from_errno(EACCES) == errc::permission_denied);
  CAF_CHECK(sandbox::errc_from_errno(EIO) == errc::io_error);
  auto e = sandbox::make_errno_error(ENOENT, "open /x");
  CAF_CHECK_EQUAL(e.message, "open /x: No such file or directory");
}
