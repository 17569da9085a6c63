// `sandbox mcp`: the session's tools (shell, code, file_editor) over the
// Model Context Protocol on stdin/stdout, one JSON-RPC message per line
// (docs/mcp.md). One session per server process; stdin's end stops it.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "cli.hpp"
#include "interrupt.hpp"
#include "mcp/server.hpp"
#include "mcp/session_tools.hpp"

#ifndef SANDBOX_VERSION
#  define SANDBOX_VERSION "unknown"
#endif

namespace sandbox::cli {

namespace {

int serve_mcp(const global_options& global, const std::string& workdir) {
  // stdout carries protocol messages only: errors and every log line go to
  // stderr.
  auto g = global;
  g.json = false;
  auto logger = spdlog::stderr_logger_mt("sandbox-mcp");
  logger->set_level(spdlog::get_level());
  spdlog::set_default_logger(logger);
  // The session: on --node a fresh one on the least loaded node (its
  // directory under the node's base directory unless --workdir names one
  // there), or the persistent one named by --session, which stays running;
  // without --node an embedded session in --workdir (default: here).
  actors::session_config cfg;
  cfg.working_directory = workdir;
  auto acquired = acquire_session(g, std::move(cfg));
  if (!acquired)
    return report(g, acquired.error());
  auto* session = &acquired->session;
  wake_pipe wake;
  // An interrupt ends the loop; the calls are cancelled and the session
  // stopped before main exits with 128 + its number.
  interrupt_guard guard{[&wake] { wake.wake(); }};
  int status = exit_ok;
  {
    mcp::session_tools tools{*session};
    mcp::server_config scfg;
    scfg.version = SANDBOX_VERSION;
    mcp::server srv{tools,
                    [&wake](const std::string& line) {
                      // The client is gone: nobody reads the answers.
                      if (!emit(1, line + '\n'))
                        wake.wake();
                    },
                    scfg};
    if (auto r = mcp::serve_lines(srv, 0, wake.fds[0]); !r)
      status = report(g, r.error());
  }
  if (acquired->owned) {
    (void) session->stop();
    spdlog::info("mcp: session stopped");
  }
  return status;
}

} // namespace

command add_mcp(CLI::App& app, global_options& g) {
  auto workdir = std::make_shared<std::string>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "mcp", "serve a session's tools (shell, code, file_editor) over the "
           "Model Context Protocol on stdin/stdout, one JSON-RPC message "
           "per line; the end of stdin stops the session");
  cmd.sub->add_option("--workdir", *workdir,
                      "working directory of the session (default: the "
                      "current directory; with --node a new directory "
                      "under the node's base directory)");
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, workdir] { return serve_mcp(g, *workdir); };
  return cmd;
}

} // namespace sandbox::cli
