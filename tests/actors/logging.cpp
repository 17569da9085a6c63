#define CAF_SUITE actors.logging
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The library's logger (docs/api.md, "Logging"): never stdout, every line
// about a session tagged with its id (and execution number), never a
// command's output; an embedder's own logger named "sandbox" gets the lines.
//
// Each case runs in a forked child whose descriptors 1 and 2 are files, so
// that what the library writes there is seen (the test runner's own stdout
// is left alone). The child is forked before this process has an actor
// system.

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "fixture.hpp"
#include "helpers/quiet_fork.hpp"
#include "helpers/temp_dir.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/log.hpp"

namespace {

using namespace sandbox;
using namespace sandbox::actors;

std::string slurp(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `body` in a forked child with stdout to `out` and stderr to `err`;
/// returns its exit status (-1 when a signal ended it).
int in_child(const std::string& out, const std::string& err,
             const std::function<int()>& body) {
  auto pid = sandbox::test::quiet_fork();
  if (pid == 0) {
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0)
      ::_exit(3);
    int status = 4;
    try {
      status = body();
    } catch (...) {
    }
    std::fflush(stdout);
    std::fflush(stderr);
    // No teardown of what the parent had (static destructors).
    ::_exit(status);
  }
  int st = 0;
  if (pid < 0 || ::waitpid(pid, &st, 0) != pid)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/// An embedded node runs a command that prints to stdout and stderr, and
/// the session stops. Returns 0, or 1 when something failed.
int embed_and_run(const std::string& dir) {
  embedded_node node{sandbox::test::suite_runtime_config()};
  session_config sc;
  sc.working_directory = dir;
  auto s = blocking_session::create(node, sc);
  if (!s)
    return 1;
  auto r = s->execute("echo output-on-stdout; echo output-on-stderr >&2");
  if (!r || r->stdout_data != "output-on-stdout\n")
    return 1;
  if (!s->stop())
    return 1;
  return 0;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST(an embedded node writes nothing to stdout and tags its lines) {
  test::temp_dir dir;
  auto out = dir.at("out");
  auto err = dir.at("err");
  auto status = in_child(out, err, [&] {
    // Every line the library has, to stderr (the logger it makes, which
    // starts at warn).
    spdlog::drop(log::logger_name);
    log::logger()->set_level(spdlog::level::debug);
    return embed_and_run(dir.path);
  });
  CAF_CHECK_EQUAL(status, 0);
  auto logged = slurp(err);
  CAF_MESSAGE("stderr of the embedding process:\n" << logged);
  CAF_CHECK_EQUAL(slurp(out), "");
  CAF_CHECK(has(logged, "node start: containment "));
  CAF_CHECK(has(logged, "created in " + dir.path));
  CAF_CHECK(has(logged, "launched pid "));
  CAF_CHECK(has(logged, " e-"));
  CAF_CHECK(has(logged, "] stopped: "));
  // Never the output of a command.
  CAF_CHECK(!has(logged, "output-on-stdout"));
  CAF_CHECK(!has(logged, "output-on-stderr"));
  // Every line about the session carries its tag.
  std::istringstream lines{logged};
  for (std::string line; std::getline(lines, line);)
    if (has(line, "created in") || has(line, "launched pid")
        || has(line, "stopped:"))
      CAF_CHECK(has(line, "[s-"));
}

CAF_TEST(the logger the library makes is quiet at info) {
  test::temp_dir dir;
  auto out = dir.at("out");
  auto err = dir.at("err");
  auto status = in_child(out, err, [&] {
    spdlog::drop(log::logger_name);
    int rc = embed_and_run(dir.path);
    if (log::logger()->level() != spdlog::level::warn)
      rc = 1;
    return rc;
  });
  CAF_CHECK_EQUAL(status, 0);
  auto logged = slurp(err);
  CAF_CHECK(!has(logged, "node start: containment "));
  CAF_CHECK(!has(logged, "created in"));
  CAF_CHECK_EQUAL(slurp(out), "");
}

CAF_TEST(an embedder routes the lines through its own logger) {
  test::temp_dir dir;
  auto out = dir.at("out");
  auto err = dir.at("err");
  auto routed = dir.at("routed");
  auto status = in_child(out, err, [&] {
    std::ostringstream captured;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
    spdlog::drop(log::logger_name);
    auto mine = std::make_shared<spdlog::logger>(log::logger_name, sink);
    mine->set_level(spdlog::level::info);
    spdlog::register_logger(mine);
    int rc = embed_and_run(dir.path);
    if (log::logger() != mine)
      rc = 1;
    std::ofstream{routed} << captured.str();
    return rc;
  });
  CAF_CHECK_EQUAL(status, 0);
  auto lines = slurp(routed);
  CAF_MESSAGE("the embedder's logger got:\n" << lines);
  CAF_CHECK(has(lines, "created in " + dir.path));
  CAF_CHECK(has(lines, "] stopped: "));
  // At info: no launch lines.
  CAF_CHECK(!has(lines, "launched pid"));
  // Nothing went to the process's own stdout or stderr from the library;
  // the command's stderr went to its result.
  CAF_CHECK_EQUAL(slurp(out), "");
  CAF_CHECK(!has(slurp(err), "created in"));
}
