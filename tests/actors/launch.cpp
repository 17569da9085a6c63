#define CAF_SUITE actors.launch
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "fixture.hpp"

using sandbox::errc;
using sandbox::exec_options;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The kernel's limit on one argument or environment string, NUL included.
size_t max_arg_strlen() {
  return static_cast<size_t>(::sysconf(_SC_PAGESIZE)) * 32;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(launch_tests, sandbox::test::node_fixture)

CAF_TEST(a NUL byte in cwd is refused naming cwd) {
  auto s = make_session();
  auto made = s.execute("mkdir a");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  exec_options opts;
  opts.cwd = std::string("a\0zzz", 5);
  auto r = s.execute("touch spawned", opts);
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::invalid_argument);
  CAF_CHECK(contains(r.error().message, "cwd"));
  auto probe = s.execute("test -e a/spawned");
  SANDBOX_REQUIRE_OK(probe);
  CAF_CHECK_NOT_EQUAL(probe->exit_code, 0);
}

CAF_TEST(a cwd that is a regular file is not a directory) {
  auto s = make_session();
  auto made = s.execute("touch afile");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  exec_options opts;
  opts.cwd = "afile";
  auto r = s.execute("true", opts);
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::path_not_found);
  CAF_CHECK(contains(r.error().message, "not a directory"));
  CAF_CHECK(contains(r.error().message, "afile"));
}

CAF_TEST(a cwd without search permission is permission_denied on the cwd) {
  if (::geteuid() == 0) {
    CAF_MESSAGE("skipped: root may enter any directory");
    return;
  }
  auto s = make_session();
  auto made = s.execute("mkdir noperm && chmod 000 noperm");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  exec_options opts;
  opts.cwd = "noperm";
  auto r = s.execute("true", opts);
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::permission_denied);
  CAF_CHECK(contains(r.error().message, "noperm"));
  CAF_CHECK(!contains(r.error().message, "cannot start"));
  (void) s.execute("chmod 700 noperm");
}

CAF_TEST(a command over the single argument limit names the limit) {
  auto s = make_session();
  std::string cmd = "true";
  while (cmd.size() < max_arg_strlen())
    cmd += " ;true";
  auto r = s.execute(cmd);
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::invalid_argument);
  CAF_CHECK(contains(r.error().message, "MAX_ARG_STRLEN"));
  CAF_CHECK(contains(r.error().message, std::to_string(max_arg_strlen())));
  // Just under the limit still runs.
  cmd = "true" + std::string(max_arg_strlen() - 10, ' ');
  auto ok = s.execute(cmd);
  SANDBOX_REQUIRE_OK(ok);
  CAF_CHECK_EQUAL(ok->exit_code, 0);
}

CAF_TEST(an env value over the single argument limit names the variable) {
  auto s = make_session();
  exec_options opts;
  opts.env["BIG_VALUE"] = std::string(200 * 1024, 'v');
  auto r = s.execute("true", opts);
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::invalid_argument);
  CAF_CHECK(contains(r.error().message, "BIG_VALUE"));
  CAF_CHECK(contains(r.error().message, "MAX_ARG_STRLEN"));
}

CAF_TEST(arguments and environment over the total limit name the limit) {
  auto s = make_session();
  exec_options opts;
  // Each value fits the single-string limit; together they exceed ARG_MAX.
  auto total = static_cast<size_t>(::sysconf(_SC_ARG_MAX));
  auto each = max_arg_strlen() / 2;
  for (size_t i = 0; i * each <= total; ++i)
    opts.env["V" + std::to_string(i)] = std::string(each, 'v');
  auto r = s.execute("true", opts);
  CAF_REQUIRE(!r);
  CAF_CHECK(contains(r.error().message, "ARG_MAX"));
}

CAF_TEST(children start with default dispositions and an empty mask) {
  auto s = make_session();
  auto r = s.execute("grep -E '^Sig(Ign|Blk)' /proc/self/status");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "SigBlk:\t0000000000000000\n"
                                  "SigIgn:\t0000000000000000\n");
}

CAF_TEST_FIXTURE_SCOPE_END()
