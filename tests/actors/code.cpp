#define CAF_SUITE actors.code
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include "fixture.hpp"

CAF_TEST_FIXTURE_SCOPE(code_tests, sandbox::test::node_fixture)

CAF_TEST(S7 code reaches the interpreter byte exact) {
  auto s = make_session();
  // Quotes, heredoc terminators, $(), backticks, NUL-free binary-ish bytes.
  std::string code = "import sys\n"
                     "s = '''EOF\n$(rm -rf /) `id` \"q\" 'x' \\\\ \\n'''\n"
                     "sys.stdout.write(s)\n"
                     "sys.stdout.write('\\u00e9\\U0001F600')\n";
  auto r = s.execute_code(code, "python3");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  CAF_CHECK_EQUAL(
    r->stdout_data,
    "EOF\n$(rm -rf /) `id` \"q\" 'x' \\ \n\xC3\xA9\xF0\x9F\x98\x80");
}

CAF_TEST(S7 shell code runs with sh) {
  auto s = make_session();
  std::string out;
  auto r
    = s.execute_code("echo one\necho 'two'\nexit 4\n", "sh", {},
                     [&](const sandbox::output_chunk& c) { out += c.data; });
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 4);
  CAF_CHECK_EQUAL(out, "one\ntwo\n");
}

CAF_TEST(S7 a missing interpreter gives 127 and names the language) {
  auto s = make_session();
  auto r = s.execute_code("print(1)", "no-such-lang");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 127);
  CAF_CHECK_EQUAL(r->stderr_data,
                  "Language interpreter not found: no-such-lang\n");
}

CAF_TEST(S7 a bad language is invalid_argument and nothing runs) {
  auto s = make_session();
  for (std::string bad : std::vector<std::string>{
         "python3; touch spawned", "py thon", "$(x)", "", "a/b", "é"}) {
    auto r = s.execute_code("open('spawned','w')", bad);
    CAF_REQUIRE(!r.has_value());
    CAF_CHECK(r.error().code == sandbox::errc::invalid_argument);
  }
  auto probe = s.execute("test -e spawned");
  SANDBOX_REQUIRE_OK(probe);
  CAF_CHECK_NOT_EQUAL(probe->exit_code, 0);
}

CAF_TEST(S7 code execution honours timeout) {
  auto s = make_session();
  auto r = sandbox::test::run_until_streamed(
    [&s](const sandbox::exec_options& o,
         const sandbox::actors::chunk_callback& f) {
      return s.execute_code("import time\nprint('x', flush=True)\n"
                            "time.sleep(30)\n",
                            "python3", o, f);
    },
    "x\n", std::chrono::milliseconds{500});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 124);
  CAF_CHECK_EQUAL(r->stdout_data, "x\n");
}

CAF_TEST(S7 a language that is no executable on PATH is not found) {
  auto s = make_session();
  // Shell builtins and keywords are found by `command -v` but are no
  // interpreters; "." and ".." are directories on every PATH entry.
  for (std::string lang : std::vector<std::string>{
         ".", "..", "cd", "if", "eval", "set", "exit", "read", "times", "trap",
         "export", "alias", "command", "type", "unset", "shift", "exec"}) {
    auto r = s.execute_code("touch spawned", lang);
    SANDBOX_REQUIRE_OK(r);
    CAF_CHECK_EQUAL(r->exit_code, 127);
    CAF_CHECK_EQUAL(r->stderr_data,
                    "Language interpreter not found: " + lang + "\n");
  }
  auto probe = s.execute("test -e spawned");
  SANDBOX_REQUIRE_OK(probe);
  CAF_CHECK_NOT_EQUAL(probe->exit_code, 0);
}

CAF_TEST(S7 an interpreter is looked up on the PATH of the execution) {
  auto s = make_session();
  auto made = s.execute("mkdir bin && "
                        "printf '#!/bin/sh\\necho mine\\ncat\\n' > bin/mylang "
                        "&& chmod +x bin/mylang");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  sandbox::exec_options opts;
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  opts.env["PATH"] = info->working_directory + "/bin:/usr/bin:/bin";
  auto r = s.execute_code("body", "mylang", opts);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  CAF_CHECK_EQUAL(r->stdout_data, "mine\nbody");
}

CAF_TEST_FIXTURE_SCOPE_END()
