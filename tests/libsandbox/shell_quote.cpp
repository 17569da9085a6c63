#define CAF_SUITE libsandbox.shell_quote
#include "caf/test/unit_test.hpp"

#include <cstdio>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <vector>

#include "sandbox/shell_quote.hpp"

using namespace std::literals;

using sandbox::errc;

namespace {

/// Runs `/bin/sh -c command` (what popen does) and returns its stdout, or
/// "<failed>" unless sh exits with status 0.
std::string run_sh(const std::string& command) {
  auto* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr)
    return "<failed>";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0)
    out.append(buf, n);
  auto status = pclose(pipe);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "<failed>";
  return out;
}

/// Strings that break naive quoting.
std::vector<std::string> hostile_words() {
  std::vector<std::string> words{
    "",
    "plain",
    "two words",
    "'",
    "''",
    "it's",
    "'\\''",
    "\"double\"",
    "\\",
    "\\n",
    "$HOME",
    "${HOME}",
    "$(rm -rf /)",
    "`rm -rf /`",
    "a; rm -rf /",
    "a && b || c | d & e",
    "line1\nline2\n",
    "\n",
    "*",
    "/*",
    "?",
    "[a-z]",
    "~",
    "~root",
    "-n",
    "--help",
    "-",
    "!",
    "#comment",
    "a=b",
    "(subshell)",
    "{a,b}",
    "<in >out 2>&1",
    "caf\xC3\xA9",
    "\xF0\x9F\x98\x80 emoji",
    "\xFF\xFE invalid utf-8 \x80",
    " leading and trailing spaces ",
    "\t\r\x0B\x0C",
  };
  std::string controls;
  for (int i = 1; i < 0x20; ++i)
    controls += static_cast<char>(i);
  words.push_back(controls);
  std::string all_bytes;
  for (int i = 1; i < 256; ++i)
    all_bytes += static_cast<char>(i);
  words.push_back(all_bytes);
  words.push_back(std::string(2000, '\''));
  return words;
}

} // namespace

CAF_TEST(quoting wraps words in single quotes) {
  CAF_CHECK_EQUAL(sandbox::shell_quote("abc").value(), "'abc'");
  CAF_CHECK_EQUAL(sandbox::shell_quote("").value(), "''");
  CAF_CHECK_EQUAL(sandbox::shell_quote("it's").value(), "'it'\\''s'");
  CAF_CHECK_EQUAL(sandbox::shell_quote("'").value(), "''\\'''");
  CAF_CHECK_EQUAL(sandbox::shell_quote("$(x)").value(), "'$(x)'");
}

CAF_TEST(sh reads every quoted hostile word back byte for byte) {
  for (const auto& word : hostile_words()) {
    auto quoted = sandbox::shell_quote(word);
    CAF_REQUIRE(quoted);
    CAF_CHECK_EQUAL(run_sh("printf %s " + *quoted), word);
  }
}

CAF_TEST(sh splits a joined command back into the original words) {
  auto words = hostile_words();
  auto joined = sandbox::shell_join(words);
  CAF_REQUIRE(joined);
  std::string expected;
  for (const auto& word : words)
    expected += "<" + word + ">";
  CAF_CHECK_EQUAL(run_sh("printf '<%s>' " + *joined), expected);
  // The word count survives too, empty words included.
  CAF_CHECK_EQUAL(run_sh("set -- " + *joined + "; printf %s $#"),
                  std::to_string(words.size()));
}

CAF_TEST(joining no words gives the empty string) {
  CAF_CHECK_EQUAL(sandbox::shell_join({}).value(), "");
  CAF_CHECK_EQUAL(sandbox::shell_join({"a", "b c"}).value(), "'a' 'b c'");
  CAF_CHECK_EQUAL(sandbox::shell_join({""}).value(), "''");
}

CAF_TEST(a NUL byte cannot be quoted) {
  auto res = sandbox::shell_quote("ab\0c"sv);
  CAF_REQUIRE(!res);
  CAF_CHECK(res.error().code == errc::invalid_argument);
  CAF_CHECK_EQUAL(res.error().message,
                  "cannot shell-quote a NUL byte (offset 2)");
  auto joined = sandbox::shell_join({"ok", "fine", std::string("\0", 1)});
  CAF_REQUIRE(!joined);
  CAF_CHECK(joined.error().code == errc::invalid_argument);
  CAF_CHECK_EQUAL(joined.error().message,
                  "cannot shell-quote word 2: NUL byte at offset 0");
}
