#define CAF_SUITE cli.files_cas
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The CLI side of the atomic write (§13): `sandbox write --if-version V` in
// 2 and 8 separate processes (32 in cli.files_cas_32, a ctest entry of its
// own so that it runs beside this one), and a `sandbox write` killed with
// SIGKILL mid-write.

#include "cas_fixture.hpp"

using namespace sandbox::test;

CAF_TEST_FIXTURE_SCOPE(cli_files_cas_tests, cas_fixture)

CAF_TEST(write if - version in 2 processes has one winner per round) {
  // A4: each CLI process has its own node; the lock must hold across them.
  run_rounds(2, cas_rounds(2));
}

CAF_TEST(write if - version in 8 processes has one winner per round) {
  run_rounds(8, cas_rounds(8));
}

CAF_TEST(a write killed with SIGKILL leaves the old file and no temporary) {
  // A14: the temporary file has no name while the bytes stream in.
  std::ofstream{target} << "old";
  auto w = start(0, {"write", "target"});
  // A blocking write of 4 MiB returns once the CLI has read all but the
  // pipe's buffer (64 KiB): it has then written at least three of its
  // 1 MiB chunks into the temporary file, each acknowledged.
  std::string data(4 << 20, 'n');
  size_t done = 0;
  while (done < data.size()) {
    auto n = ::write(w.in, data.data() + done, data.size() - done);
    if (n <= 0)
      CAF_FAIL("cannot feed the writer");
    done += static_cast<size_t>(n);
  }
  ::kill(w.pid, SIGKILL);
  CAF_CHECK_EQUAL(wait_for(w.pid), 128 + SIGKILL);
  ::close(w.in);
  CAF_CHECK(names_in(wd) == std::vector<std::string>{"target"});
  CAF_CHECK_EQUAL(slurp(target), "old");
  // The next write works and leaves nothing either.
  auto again = run_shell("cd '" + wd + "' && echo new | TMPDIR='" + root
                         + "/tmp' " + cli_path() + " write target");
  CAF_CHECK_EQUAL(again.status, 0);
  CAF_CHECK_EQUAL(slurp(target), "new\n");
  CAF_CHECK(names_in(wd) == std::vector<std::string>{"target"});
}

CAF_TEST_FIXTURE_SCOPE_END()
