// sandbox-mcp-bench: `tools/call shell {"command":"true"}` round trips per
// second through `sandbox mcp` (a child process, over its stdin/stdout), as
// a ratio to the library's `execute("true")` measured in the same run: the
// two take turns in 100 ms slices. Goal: ≥ 0.7. See docs/benchmarks.md.
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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/tools/tools.hpp"

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

/// Library baseline: execute("true") on one session of a node that
/// leaves the host's own children alone (reap_all_orphans off), so that
/// `sandbox mcp`, our child, can run beside it.
struct library_side {
  sandbox::actors::embedded_node node;
  std::optional<sandbox::actors::blocking_session> session;

  library_side() {
    sandbox::actors::session_config scfg;
    scfg.working_directory = ".";
    auto s = sandbox::actors::blocking_session::create(node, scfg);
    if (!s) {
      fmt::print(stderr, "session: {}\n", s.error().message);
      std::exit(1);
    }
    session.emplace(std::move(*s));
  }

  ~library_side() {
    (void) session->stop();
  }

  void round_trip() {
    auto r = session->execute("true");
    if (!r || r->exit_code != 0) {
      fmt::print(stderr, "execute(true) failed\n");
      std::exit(1);
    }
  }
};

/// The same tool call in process, without the server: what the toolbox
/// itself costs.
struct toolbox_side {
  sandbox::actors::toolbox box;
  explicit toolbox_side(sandbox::actors::blocking_session& s) : box(s) {
  }
  void round_trip() {
    auto r = box.call("shell", {{"command", "true"}});
    if (!r || r->is_error) {
      fmt::print(stderr, "toolbox shell true failed\n");
      std::exit(1);
    }
  }
};

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

/// `tools/call shell true` round trips through `sandbox mcp`.
struct mcp_side {
  mcp_child child;
  int64_t id = 0;

  explicit mcp_side(const std::string& cli) : child(cli) {
    child.call(
      {{"jsonrpc", "2.0"},
       {"id", 0},
       {"method", "initialize"},
       {"params",
        {{"protocolVersion", "2025-06-18"},
         {"capabilities", json::object()},
         {"clientInfo", {{"name", "sandbox-mcp-bench"}, {"version", "1"}}}}}});
    child.send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  }

  void round_trip() {
    auto r = child.call(
      {{"jsonrpc", "2.0"},
       {"id", ++id},
       {"method", "tools/call"},
       {"params", {{"name", "shell"}, {"arguments", {{"command", "true"}}}}}});
    if (!r.contains("result") || r["result"].value("isError", true)) {
      fmt::print(stderr, "tools/call failed: {}\n", r.dump());
      std::exit(1);
    }
  }
};

/// Round trips per second of `side` over the slices it ran.
struct tally {
  size_t n = 0;
  double seconds = 0;
  double rate() const {
    return seconds > 0 ? static_cast<double>(n) / seconds : 0;
  }
};

template <class Side>
void run_slice(Side& side, double seconds, tally& t) {
  auto start = clock_type::now();
  size_t n = 0;
  while (seconds_since(start) < seconds) {
    side.round_trip();
    ++n;
  }
  t.n += n;
  t.seconds += seconds_since(start);
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
  // Both sides live at once and take turns in short slices, so that the
  // load of a busy machine falls on both alike.
  constexpr double slice = 0.1;
  std::vector<double> ratios;
  fmt::print("| run | library execute(\"true\") | toolbox shell true, in "
             "process | `sandbox mcp` tools/call shell true | ratio mcp / "
             "library |\n| --- | --- | --- | --- | --- |\n");
  {
    auto mcp = std::make_unique<mcp_side>(cli);
    {
      library_side lib;
      toolbox_side box{*lib.session};
      tally warm;
      run_slice(lib, 0.2, warm);
      run_slice(box, 0.2, warm);
      run_slice(*mcp, 0.2, warm);
      for (int i = 1; i <= runs; ++i) {
        tally l;
        tally b;
        tally m;
        while (l.seconds < seconds || m.seconds < seconds) {
          run_slice(lib, slice, l);
          run_slice(box, slice, b);
          run_slice(*mcp, slice, m);
        }
        auto ratio = m.rate() / l.rate();
        ratios.push_back(ratio);
        fmt::print("| {} | {:.0f} /s | {:.0f} /s | {:.0f} /s | {:.2f} |\n", i,
                   l.rate(), b.rate(), m.rate(), ratio);
      }
    }
    // No node any more: the server's exit status is ours to collect.
    if (int st = mcp->child.finish(); st != 0) {
      fmt::print(stderr, "sandbox mcp exited with {}\n", st);
      return 1;
    }
  }
  std::sort(ratios.begin(), ratios.end());
  auto median = ratios[ratios.size() / 2];
  fmt::print("\nmedian ratio mcp / library: {:.2f} (goal >= 0.7: {})\n", median,
             median >= 0.7 ? "met" : "NOT met");
  return 0;
}
