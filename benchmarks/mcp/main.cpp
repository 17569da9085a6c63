// sandbox-mcp-bench: `tools/call shell {"command":"true"}` round trips per
// second through `sandbox mcp` (a child process, over its stdin/stdout), as
// a ratio to the library's `execute("true")` measured in the same run
// (before and after, averaged). Goal: ≥ 0.7. See docs/benchmarks.md.
//
//   sandbox-mcp-bench [--seconds S] [--runs N] [--cli PATH]

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sandbox/actors/blocking_session.hpp"

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

/// Library baseline: execute("true") in a loop on one session.
double library_rate(double seconds) {
  sandbox::actors::runtime_config cfg;
  cfg.reap_all_orphans = true;
  sandbox::actors::embedded_node node{cfg};
  sandbox::actors::session_config scfg;
  scfg.working_directory = ".";
  auto s = sandbox::actors::blocking_session::create(node, scfg);
  if (!s) {
    fmt::print(stderr, "session: {}\n", s.error().message);
    std::exit(1);
  }
  for (int i = 0; i < 20; ++i) // warm-up
    (void) s->execute("true");
  size_t n = 0;
  auto start = clock_type::now();
  while (seconds_since(start) < seconds) {
    auto r = s->execute("true");
    if (!r || r->exit_code != 0) {
      fmt::print(stderr, "execute(true) failed\n");
      std::exit(1);
    }
    ++n;
  }
  auto rate = static_cast<double>(n) / seconds_since(start);
  (void) s->stop();
  return rate;
}

/// `sandbox mcp` as a child with pipes on its stdin and stdout.
struct mcp_child {
  pid_t pid = -1;
  int in = -1;  // its stdin
  int out = -1; // its stdout
  std::string buf;

  explicit mcp_child(const std::string& cli) {
    int to[2];
    int from[2];
    if (::pipe2(to, O_CLOEXEC) != 0 || ::pipe2(from, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe2");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    std::vector<std::string> args{cli, "mcp", "--log-level", "error"};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid, cli.c_str(), &fa, nullptr, argv.data(), environ)
        != 0)
      throw std::runtime_error("cannot start " + cli);
    posix_spawn_file_actions_destroy(&fa);
    ::close(to[0]);
    ::close(from[1]);
    in = to[1];
    out = from[0];
  }

  void send(const json& msg) {
    auto line = msg.dump() + "\n";
    std::string_view rest{line};
    while (!rest.empty()) {
      auto n = ::write(in, rest.data(), rest.size());
      if (n <= 0)
        throw std::runtime_error("write to sandbox mcp failed");
      rest.remove_prefix(static_cast<size_t>(n));
    }
  }

  json receive() {
    for (;;) {
      if (auto nl = buf.find('\n'); nl != std::string::npos) {
        auto line = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        return json::parse(line);
      }
      char chunk[65536];
      auto n = ::read(out, chunk, sizeof(chunk));
      if (n <= 0)
        throw std::runtime_error("sandbox mcp closed its stdout");
      buf.append(chunk, static_cast<size_t>(n));
    }
  }

  /// Sends a request and waits for its response.
  json call(const json& msg) {
    send(msg);
    for (;;) {
      auto r = receive();
      if (r.contains("id") && r["id"] == msg["id"])
        return r;
    }
  }

  /// Closes its stdin and waits: the server must exit 0.
  int finish() {
    ::close(in);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ::close(out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
};

double mcp_rate(const std::string& cli, double seconds) {
  mcp_child c{cli};
  c.call({{"jsonrpc", "2.0"},
          {"id", 0},
          {"method", "initialize"},
          {"params",
           {{"protocolVersion", "2025-06-18"},
            {"capabilities", json::object()},
            {"clientInfo", {{"name", "sandbox-mcp-bench"}, {"version", "1"}}}}}});
  c.send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  int64_t id = 0;
  auto round_trip = [&] {
    auto r = c.call({{"jsonrpc", "2.0"},
                     {"id", ++id},
                     {"method", "tools/call"},
                     {"params",
                      {{"name", "shell"},
                       {"arguments", {{"command", "true"}}}}}});
    if (!r.contains("result") || r["result"].value("isError", true)) {
      fmt::print(stderr, "tools/call failed: {}\n", r.dump());
      std::exit(1);
    }
  };
  for (int i = 0; i < 20; ++i) // warm-up
    round_trip();
  size_t n = 0;
  auto start = clock_type::now();
  while (seconds_since(start) < seconds) {
    round_trip();
    ++n;
  }
  auto rate = static_cast<double>(n) / seconds_since(start);
  if (int st = c.finish(); st != 0) {
    fmt::print(stderr, "sandbox mcp exited with {}\n", st);
    std::exit(1);
  }
  return rate;
}

std::string default_cli() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string self = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  return self.substr(0, self.rfind('/') + 1) + "sandbox";
}

} // namespace

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"sandbox-mcp-bench: tools/call shell true through `sandbox "
               "mcp` against the library's execute(\"true\")"};
  double seconds = 3.0;
  std::string cli = default_cli();
  app.add_option("--seconds", seconds, "length of each timed phase");
  int runs = 3;
  app.add_option("--runs", runs, "runs; the median ratio counts")
    ->check(CLI::Range(1, 100));
  app.add_option("--cli", cli, "the sandbox CLI (default: next to this)");
  CLI11_PARSE(app, argc, argv);
  // One side at a time: no node exists while the MCP server runs (a node
  // reaping every orphan could take the server, our child). Each run
  // measures the library before and after the server and takes the mean.
  std::vector<double> ratios;
  fmt::print("| run | library before | `sandbox mcp` | library after | "
             "ratio |\n| --- | --- | --- | --- | --- |\n");
  for (int i = 1; i <= runs; ++i) {
    auto lib_before = library_rate(seconds);
    auto mcp = mcp_rate(cli, seconds);
    auto lib_after = library_rate(seconds);
    auto ratio = mcp / ((lib_before + lib_after) / 2);
    ratios.push_back(ratio);
    fmt::print("| {} | {:.0f} /s | {:.0f} /s | {:.0f} /s | {:.2f} |\n", i,
               lib_before, mcp, lib_after, ratio);
  }
  std::sort(ratios.begin(), ratios.end());
  auto median = ratios[ratios.size() / 2];
  fmt::print("\nmedian ratio mcp / library: {:.2f} (goal >= 0.7: {})\n",
             median, median >= 0.7 ? "met" : "NOT met");
  return 0;
}
