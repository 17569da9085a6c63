#define CAF_SUITE libsandbox.validation
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <string>
#include <string_view>

#include <unistd.h>

#include "sandbox/validation.hpp"

using namespace std::literals;

using sandbox::errc;

namespace {

/// Returns the message of a failed check, or "" if the check passed.
std::string message_of(const sandbox::result<void>& res) {
  return res ? std::string{} : res.error().message;
}

bool fails_with_invalid_argument(const sandbox::result<void>& res) {
  return !res && res.error().code == errc::invalid_argument;
}

} // namespace

CAF_TEST(S3 env names of letters digits and underscores are valid) {
  for (auto name : {"A"sv, "a"sv, "_"sv, "__"sv, "PATH"sv, "_x9"sv,
                    "HOME_DIR_2"sv, "z0123456789"sv}) {
    CAF_CHECK(sandbox::is_valid_env_name(name));
  }
  CAF_CHECK(sandbox::is_valid_env_name(std::string(100000, 'A')));
}

CAF_TEST(S3 hostile env names are invalid) {
  auto hostile = {""sv,         "1A"sv,
                  "9"sv,        "A-B"sv,
                  "$(id)"sv,    "`id`"sv,
                  "A B"sv,      "\"A\""sv,
                  "'A'"sv,      "A\n"sv,
                  "\nA"sv,      "A\0B"sv,
                  "\0"sv,       "A="sv,
                  "=A"sv,       "caf\xC3\xA9"sv,
                  "\xC3\xA9"sv, "A\xF0\x9F\x98\x80"sv,
                  "A;B"sv,      "A.B"sv,
                  "A\tB"sv,     "A\x7F"sv,
                  "A\xFF"sv};
  for (auto name : hostile) {
    CAF_CHECK(!sandbox::is_valid_env_name(name));
  }
  auto long_bad = std::string(100000, 'A') + "-";
  CAF_CHECK(!sandbox::is_valid_env_name(long_bad));
}

CAF_TEST(escaped messages show control bytes quotes and non - ASCII) {
  CAF_CHECK_EQUAL(sandbox::escape_for_message("plain text"), "plain text");
  CAF_CHECK_EQUAL(sandbox::escape_for_message("a\nb"), "a\\x0Ab");
  CAF_CHECK_EQUAL(sandbox::escape_for_message("a\0b"sv), "a\\x00b");
  CAF_CHECK_EQUAL(sandbox::escape_for_message("say \"hi\""), "say \\\"hi\\\"");
  CAF_CHECK_EQUAL(sandbox::escape_for_message("back\\slash"), "back\\\\slash");
  CAF_CHECK_EQUAL(sandbox::escape_for_message("\xC3\xA9"), "\\xC3\\xA9");
  CAF_CHECK_EQUAL(sandbox::escape_for_message("\x7F\x01"), "\\x7F\\x01");
  CAF_CHECK_EQUAL(sandbox::escape_for_message(""), "");
  // Every byte value yields printable ASCII.
  std::string all;
  for (int i = 0; i < 256; ++i)
    all += static_cast<char>(i);
  for (char c : sandbox::escape_for_message(all))
    CAF_CHECK(c >= 0x20 && c < 0x7F);
}

CAF_TEST(escaped output lines keep UTF - 8 and show control bytes) {
  using sandbox::escape;
  using sandbox::escape_style;
  CAF_CHECK_EQUAL(escape("plain \"text\"", escape_style::control),
                  "plain \"text\"");
  CAF_CHECK_EQUAL(escape("a\nb\tc", escape_style::control), "a\\nb\\tc");
  CAF_CHECK_EQUAL(escape("a\0b\x7F"sv, escape_style::control), "a\\x00b\\x7F");
  CAF_CHECK_EQUAL(escape("back\\slash", escape_style::control),
                  "back\\\\slash");
  CAF_CHECK_EQUAL(escape("\xC3\xA9", escape_style::control), "\xC3\xA9");
  // No byte below 0x20 is left: the text stays on one line.
  std::string all;
  for (int i = 0; i < 256; ++i)
    all += static_cast<char>(i);
  for (char c : escape(all, escape_style::control))
    CAF_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7F);
}

CAF_TEST(quoted messages shorten very long inputs) {
  CAF_CHECK_EQUAL(sandbox::quote_for_message("A\nB"), "\"A\\x0AB\"");
  auto at_limit = std::string(sandbox::message_input_limit, 'A');
  CAF_CHECK_EQUAL(sandbox::quote_for_message(at_limit), "\"" + at_limit + "\"");
  auto huge = std::string(100000, 'B');
  CAF_CHECK_EQUAL(sandbox::quote_for_message(huge),
                  "\"" + std::string(64, 'B') + "\"... (100000 bytes)");
}

CAF_TEST(S3 validate_env accepts good names and any value without NUL) {
  sandbox::env_map env{{"PATH", "/bin"},
                       {"_X", ""},
                       {"Y2", "$(rm -rf /) `id` 'q' \"q\"\n\xFF\xC3\xA9"}};
  CAF_CHECK(sandbox::validate_env(env));
  CAF_CHECK(sandbox::validate_env({}));
}

CAF_TEST(S3 validate_env names the bad key escaped) {
  auto check = [](std::string key, std::string expected) {
    sandbox::env_map env{{"GOOD", "1"}, {key, "v"}};
    auto res = sandbox::validate_env(env);
    CAF_CHECK(fails_with_invalid_argument(res));
    CAF_CHECK_EQUAL(message_of(res),
                    "invalid environment variable name: " + expected);
  };
  check("", "\"\"");
  check("1ABC", "\"1ABC\"");
  check("A-B", "\"A-B\"");
  check("$(id)", "\"$(id)\"");
  check("`id`", "\"`id`\"");
  check("A\"B", "\"A\\\"B\"");
  check("A\nB", "\"A\\x0AB\"");
  check(std::string("A\0B", 3), "\"A\\x00B\"");
  check("caf\xC3\xA9", "\"caf\\xC3\\xA9\"");
  check("\xF0\x9F\x98\x80", "\"\\xF0\\x9F\\x98\\x80\"");
  check(std::string(5000, 'x') + "!",
        "\"" + std::string(64, 'x') + "\"... (5001 bytes)");
}

CAF_TEST(S3 validate_env reports the first bad key in name order) {
  sandbox::env_map env{{"B-2", "v"}, {"A-1", "v"}, {"OK", "v"}};
  CAF_CHECK_EQUAL(message_of(sandbox::validate_env(env)),
                  "invalid environment variable name: \"A-1\"");
}

CAF_TEST(S3 validate_env refuses a value with a NUL byte) {
  sandbox::env_map env{{"KEY", std::string("ab\0c", 4)}};
  auto res = sandbox::validate_env(env);
  CAF_CHECK(fails_with_invalid_argument(res));
  CAF_CHECK_EQUAL(message_of(res), "invalid value of environment variable "
                                   "\"KEY\": NUL byte at offset 2");
}

CAF_TEST(S7 languages of letters digits dots dashes underscores are valid) {
  for (auto lang : {"python3"sv, "python3.11"sv, "node"sv, "x_y-z.1"sv, "sh"sv,
                    "-"sv, "..."sv, "Python-3_X"sv}) {
    CAF_CHECK(sandbox::validate_language(lang));
  }
}

CAF_TEST(S7 hostile languages are invalid and named escaped) {
  auto check = [](std::string_view lang, std::string expected) {
    auto res = sandbox::validate_language(lang);
    CAF_CHECK(fails_with_invalid_argument(res));
    CAF_CHECK_EQUAL(message_of(res), "invalid language: " + expected);
  };
  check("", "\"\"");
  check("py thon", "\"py thon\"");
  check("c++", "\"c++\"");
  check("python;rm -rf /", "\"python;rm -rf /\"");
  check("$(id)", "\"$(id)\"");
  check("`id`", "\"`id`\"");
  check("py\"", "\"py\\\"\"");
  check("py/../../bin/sh", "\"py/../../bin/sh\"");
  check("python\n", "\"python\\x0A\"");
  check("py\0thon"sv, "\"py\\x00thon\"");
  check("caf\xC3\xA9", "\"caf\\xC3\\xA9\"");
  check("\xF0\x9F\x98\x80", "\"\\xF0\\x9F\\x98\\x80\"");
  CAF_CHECK(sandbox::validate_language(std::string(100000, 'p')));
}

CAF_TEST(commands without NUL bytes are valid whatever they contain) {
  for (auto cmd :
       {""sv, "echo hi"sv, "printf '%s' \"$(id)\" `id`"sv, "a\nb\r\n"sv,
        "\xFF\xFE binary"sv, "caf\xC3\xA9 \xF0\x9F\x98\x80"sv}) {
    CAF_CHECK(sandbox::validate_command(cmd));
  }
}

CAF_TEST(a command with a NUL byte is invalid and names the offset) {
  auto res = sandbox::validate_command("echo a\0b"sv);
  CAF_CHECK(fails_with_invalid_argument(res));
  CAF_CHECK_EQUAL(message_of(res), "invalid command: NUL byte at offset 6");
  CAF_CHECK_EQUAL(message_of(sandbox::validate_command("\0"sv)),
                  "invalid command: NUL byte at offset 0");
}

CAF_TEST(the single argument limit is 32 pages) {
  CAF_CHECK_EQUAL(sandbox::max_argument_bytes(),
                  static_cast<size_t>(::sysconf(_SC_PAGESIZE)) * 32);
}

CAF_TEST(a command over the single argument limit is invalid naming it) {
  auto limit = sandbox::max_argument_bytes();
  CAF_CHECK(sandbox::validate_command(std::string(limit - 1, 'x')));
  auto res = sandbox::validate_command(std::string(limit, 'x'));
  CAF_CHECK(fails_with_invalid_argument(res));
  CAF_CHECK_EQUAL(message_of(res),
                  "invalid command: " + std::to_string(limit + 1)
                    + " bytes, over the kernel's limit of "
                    + std::to_string(limit)
                    + " bytes for one argument (MAX_ARG_STRLEN)");
}

CAF_TEST(an env entry over the single argument limit names the variable) {
  auto limit = sandbox::max_argument_bytes();
  // "K=" + value + NUL
  CAF_CHECK(sandbox::validate_env({{"K", std::string(limit - 3, 'v')}}));
  auto res = sandbox::validate_env({{"K", std::string(limit - 2, 'v')}});
  CAF_CHECK(fails_with_invalid_argument(res));
  CAF_CHECK_EQUAL(message_of(res),
                  "environment variable \"K\" is " + std::to_string(limit + 1)
                    + " bytes, over the kernel's limit of "
                    + std::to_string(limit)
                    + " bytes for one string (MAX_ARG_STRLEN)");
}
