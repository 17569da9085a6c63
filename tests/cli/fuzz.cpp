#define CAF_SUITE cli.fuzz
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Random argument vectors for the CLI, from a grammar of subcommands,
// options, good and bad values and odd strings (control characters, bytes
// that are not UTF-8), with and without --json. Every run must end in time
// and without a signal, with an expected status, exactly one error line on
// error (stderr in text mode, a JSON line on stdout with --json), only JSON
// lines with a `type` on stdout with --json, and nothing started on a usage
// error: every command the CLI could run creates a marker file, which must
// not exist after exit status 2.
//
// SANDBOX_FUZZ_SECONDS bounds the time (default 20), SANDBOX_FUZZ_SEED
// picks the sequence and SANDBOX_FUZZ_START its first iteration: a failure
// prints all three values needed to reproduce it.

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <random>

#include "cli_fixture.hpp"

using namespace sandbox::test;

namespace {

uint64_t env_number(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

/// The argument vector of one run and what kind of run it is.
struct case_args {
  std::vector<std::string> args;
  bool runs_command = false; // run or code: the command's status passes
  bool help = false;         // help text is not JSON
};

struct grammar {
  std::mt19937_64 rng;
  std::string marker;
  std::string code_file;

  bool chance(double p) {
    return std::uniform_real_distribution<double>{0, 1}(rng) < p;
  }

  template <class T>
  const T& pick(const std::vector<T>& xs) {
    return xs[std::uniform_int_distribution<size_t>{0, xs.size() - 1}(rng)];
  }

  /// A short string of letters, '=', '-', spaces, control bytes, bytes
  /// that are not UTF-8 and two-byte characters; never '/' or '.', so a
  /// path made of it stays in the test's directory.
  std::string weird() {
    static const std::vector<std::string> atoms{
      "a",        "Z",        "_",    "0",    "9",    "=",    "-",    " ",
      "\n",       "\t",       "\x01", "\x1b", "\x7f", "\xff", "\xfe", "\x80",
      "\xc3\xa9", "\xe2\x82", "%",    "\\",   "'",    "\"",   "$",    "*"};
    std::string out;
    auto n = std::uniform_int_distribution<int>{0, 8}(rng);
    for (int i = 0; i < n; ++i)
      out += pick(atoms);
    return out;
  }

  std::string path() {
    if (chance(0.3))
      return weird();
    return pick(std::vector<std::string>{"f.txt", "d", "missing", "d/f", "new",
                                         "", "fifo"});
  }

  std::string number() {
    if (chance(0.25))
      return weird();
    return pick(std::vector<std::string>{
      "0", "1", "2", "5", "-1", "-5", "1e9", "1e10", "nan", "inf", "", "abc",
      "0x10", "99999999999999999999", "4294967296", "1.5", "+3",
      "9223372036854775807"});
  }

  std::string timeout() {
    if (chance(0.2))
      return weird();
    return pick(std::vector<std::string>{"0", "5", "1e9", "-1", "1e10", "nan",
                                         "inf", "", "abc", "1e999", "0x10"});
  }

  std::string env_entry() {
    if (chance(0.3))
      return weird();
    return pick(std::vector<std::string>{"A=1", "B=two words", "A", "1A=b",
                                         "=x", "A=", "_X=\xff"});
  }

  /// Options of run and code, in random order and number.
  void exec_options(std::vector<std::string>& a) {
    auto n = std::uniform_int_distribution<int>{0, 3}(rng);
    for (int i = 0; i < n; ++i) {
      switch (std::uniform_int_distribution<int>{0, 3}(rng)) {
        case 0:
          a.insert(a.end(), {"--timeout", timeout()});
          break;
        case 1:
          a.insert(a.end(), {"--cwd", path()});
          break;
        case 2:
          a.insert(a.end(), {"--env", env_entry()});
          if (chance(0.3))
            a.push_back(env_entry());
          break;
        default:
          a.push_back(chance(0.5) ? "--bogus" : "-z");
      }
    }
  }

  case_args subcommand() {
    case_args c;
    auto& a = c.args;
    auto touch = "touch '" + marker + "'";
    switch (std::uniform_int_distribution<int>{0, 11}(rng)) {
      case 0:
      case 1: {
        a.push_back("run");
        exec_options(a);
        c.runs_command = true;
        if (chance(0.1))
          break; // no command
        if (chance(0.7))
          a.push_back("--");
        a.push_back(
          pick(std::vector<std::string>{touch, touch + "; exit 3", "true"}));
        break;
      }
      case 2: {
        a.push_back("code");
        c.runs_command = true;
        if (chance(0.9)) {
          a.push_back(chance(0.5) ? "-l" : "--language");
          a.push_back(pick(std::vector<std::string>{
            "sh", "sh", "nosuch-lang", "", "bad lang", "sh\n", "\xff"}));
        }
        exec_options(a);
        if (chance(0.8))
          a.push_back(
            pick(std::vector<std::string>{code_file, "-", "missing", weird()}));
        break;
      }
      case 3:
        a.insert(a.end(), {"read", path()});
        if (chance(0.4))
          a.insert(a.end(), {"--start-line", number()});
        if (chance(0.4))
          a.insert(a.end(), {"--end-line", number()});
        break;
      case 4:
        a.insert(a.end(), {"write", path()});
        if (chance(0.3))
          a.insert(a.end(), {"--if-version", chance(0.5) ? "" : weird()});
        break;
      case 5:
        a.insert(a.end(), {"rm", path()});
        break;
      case 6:
        a.push_back("ls");
        if (chance(0.7))
          a.push_back(path());
        if (chance(0.5))
          a.insert(a.end(), {"--depth", number()});
        break;
      case 7:
        a.insert(a.end(), {"stat", path()});
        break;
      case 8: {
        a.push_back("session");
        auto what = std::uniform_int_distribution<int>{0, 4}(rng);
        if (what == 0) {
          a.push_back("create");
          if (chance(0.3))
            a.insert(a.end(), {"--workdir", "wd-" + weird()});
          if (chance(0.3))
            a.insert(a.end(), {"--home", "home-" + weird()});
          if (chance(0.4))
            a.insert(a.end(), {"--env", env_entry()});
        } else if (what == 1) {
          a.push_back("list");
        } else if (what == 2) {
          a.push_back("stop");
          if (chance(0.8))
            a.push_back(weird());
        } else if (what == 3) {
          a.push_back(weird());
        }
        break;
      }
      case 9:
        c.help = true;
        a.push_back(
          pick(std::vector<std::string>{"help", "--help", "-h", "--version"}));
        if (chance(0.5))
          a.push_back(
            pick(std::vector<std::string>{"run", "session", "ls", "bogus"}));
        break;
      case 10:
        a.push_back(weird());
        break;
      default:
        break; // no subcommand at all
    }
    return c;
  }

  /// A whole argument vector: a subcommand, global options and stray
  /// words at random places (never after `--`).
  case_args make() {
    auto c = subcommand();
    auto& a = c.args;
    auto end = [&] {
      auto i = std::find(a.begin(), a.end(), "--");
      return static_cast<size_t>(i - a.begin());
    };
    // Not between an option and its value: the option would take the
    // inserted word as its value (as any parser would).
    static const std::vector<std::string> valued{
      "--timeout",    "--cwd",        "--env",      "-l",
      "--language",   "--start-line", "--end-line", "--depth",
      "--if-version", "--workdir",    "--home",     "--node",
      "--log-level",  "--session",    "--tls-cert"};
    auto insert = [&](std::vector<std::string> words) {
      std::vector<size_t> places;
      for (size_t at = 0; at <= end(); ++at)
        if (at == 0
            || std::find(valued.begin(), valued.end(), a[at - 1])
                 == valued.end())
          places.push_back(at);
      auto at = pick(places);
      a.insert(a.begin() + static_cast<long>(at), words.begin(), words.end());
    };
    if (chance(0.5))
      insert({"--json"});
    if (chance(0.15))
      insert({"--log-level", pick(std::vector<std::string>{
                               "warn", "error", "off", "bogus", ""})});
    if (chance(0.05))
      insert({"--node", "localhost:1"});
    if (chance(0.05))
      insert({"--session", weird()});
    if (chance(0.05))
      insert({"--tls-cert", weird()});
    if (chance(0.08))
      insert({weird()});
    for (auto& w : a)
      if (w == "--help" || w == "-h" || w == "--version" || w == "help")
        c.help = true;
    return c;
  }
};

std::string shown(const std::vector<std::string>& args) {
  std::string out;
  for (auto& a : args) {
    out += " '";
    for (unsigned char ch : a) {
      if (ch < 0x20 || ch >= 0x7f || ch == '\'' || ch == '\\')
        out += "\\x" + std::string{"0123456789abcdef"[ch >> 4]}
               + "0123456789abcdef"[ch & 15];
      else
        out += static_cast<char>(ch);
    }
    out += "'";
  }
  return out;
}

/// Checks one run; returns what is wrong, or "".
std::string verdict(const case_args& c, bool json, const spawn_result& r,
                    bool marker_exists) {
  if (!r.exited)
    return "ended by a signal";
  if (r.status == 124 || r.status == 137)
    return "did not end in time";
  bool allowed = r.status <= 2
                 || (c.runs_command
                     && (r.status == 3 || r.status == 126 || r.status == 127));
  if (!allowed)
    return "unexpected exit status " + std::to_string(r.status);
  if (r.status == 2 && marker_exists)
    return "a usage error still ran the command";
  if (c.help && r.status == 0)
    return "";
  std::vector<nlohmann::json> lines;
  if (json) {
    try {
      lines = json_lines(r.out);
    } catch (const std::exception& e) {
      return std::string{"stdout is not JSON lines: "} + e.what();
    }
    for (auto& j : lines)
      if (!j.is_object() || !j.contains("type"))
        return "a JSON line without type";
  }
  if (r.status != 1 && r.status != 2)
    return "";
  // A command that ran may itself exit 1 or 2 (`sh` does on a syntax error
  // in the joined words): then the status and the output are the command's.
  // JSON mode shows that it ran by its result line; text mode by a stderr
  // that is not ours.
  if (c.runs_command) {
    for (auto& j : lines)
      if (j["type"] == "result")
        return "";
    if (!json && !r.err.empty() && r.err.rfind("sandbox: ", 0) != 0)
      return "";
  }
  if (!json) {
    if (count_lines(r.err) != 1 || r.err.rfind("sandbox: ", 0) != 0)
      return "not exactly one error line on stderr";
    if (r.status == 2 && !r.out.empty())
      return "output on a usage error";
    return "";
  }
  if (!r.err.empty())
    return "stderr is not empty in JSON mode";
  size_t errors = 0;
  for (auto& j : lines)
    errors += j["type"] == "error"
              || (j["type"] == "done" && !j["error"].is_null());
  if (errors != 1)
    return "not exactly one JSON error line";
  if (r.status == 2 && (lines.size() != 1 || lines[0]["code"] != "usage"))
    return "a usage error is not one JSON line with code usage";
  return "";
}

} // namespace

CAF_TEST(random argument vectors end cleanly) {
  auto budget = std::chrono::seconds(env_number("SANDBOX_FUZZ_SECONDS", 20));
  auto seed = env_number("SANDBOX_FUZZ_SEED", std::random_device{}());
  auto start = env_number("SANDBOX_FUZZ_START", 0);
  CAF_MESSAGE("SANDBOX_FUZZ_SEED=" << seed << " SANDBOX_FUZZ_START=" << start);
  temp_dir dir;
  auto deadline = std::chrono::steady_clock::now() + budget;
  uint64_t i = start;
  for (; std::chrono::steady_clock::now() < deadline && i < start + 5000; ++i) {
    grammar g;
    g.rng.seed(seed * 1000003 + i);
    g.marker = dir.at("marker-" + std::to_string(i));
    g.code_file = dir.at("code.sh");
    spit(g.code_file, "touch '" + g.marker + "'\n");
    spit(dir.at("f.txt"), "one\ntwo\n");
    ::mkdir(dir.at("d").c_str(), 0755);
    auto c = g.make();
    bool json = false;
    for (auto& a : c.args) {
      if (a == "--")
        break;
      json = json || a == "--json";
    }
    spawn_options o;
    o.cwd = dir.path;
    o.env = {"TMPDIR=" + dir.path};
    o.limit_seconds = 30;
    auto r = spawn_cli(c.args, o);
    bool marker = ::access(g.marker.c_str(), F_OK) == 0;
    auto wrong = verdict(c, json, r, marker);
    if (!wrong.empty())
      CAF_FAIL(wrong << "\n  reproduce: SANDBOX_FUZZ_SEED=" << seed
                     << " SANDBOX_FUZZ_START=" << i << "\n  args:"
                     << shown(c.args) << "\n  status: " << r.status
                     << "\n  stdout: " << shown({r.out})
                     << "\n  stderr: " << shown({r.err}));
    ::unlink(g.marker.c_str());
  }
  CAF_MESSAGE(i - start << " runs");
  CAF_CHECK(i > start);
}
