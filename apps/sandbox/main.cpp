// sandbox: one CLI with subcommands (DESIGN.md §5).

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "cli.hpp"
#include "interrupt.hpp"

int main(int argc, char** argv) {
  using namespace sandbox::cli;
  install_interrupt_handling();
  CLI::App app{"sandbox: run commands, code and file operations in "
               "sessions, on this machine or a remote node",
               "sandbox"};
  app.require_subcommand(1);
  global_options g;
  // Global options are accepted before or after the subcommand.
  app.fallthrough();
  app.add_option("--node", g.node, "HOST:PORT of a remote node");
  app.add_flag("--json", g.json, "print one JSON object per line");
  app.add_option("--log-level", g.log_level,
                 "trace, debug, info, warn, error or off");
  app.add_option("--session", g.session, "id of a session on the node");
  app.add_option("--tls-cert", g.tls_cert, "certificate (PEM) for TLS");
  app.add_option("--tls-key", g.tls_key, "private key (PEM) for TLS");
  app.add_option("--tls-ca", g.tls_ca, "CA certificates (PEM) for TLS");
  std::vector<command> commands;
  commands.push_back(add_run(app, g));
  commands.push_back(add_code(app, g));
  commands.push_back(add_read(app, g));
  commands.push_back(add_write(app, g));
  commands.push_back(add_rm(app, g));
  commands.push_back(add_ls(app, g));
  commands.push_back(add_stat(app, g));
  commands.push_back(add_session(app, g));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return exit_usage;
  }
  spdlog::set_level(spdlog::level::from_str(g.log_level));
  int status = exit_error;
  for (auto& cmd : commands)
    if (cmd.sub->parsed())
      status = cmd.run();
  // Exit without tearing down the actor system from a static destructor:
  // sessions were stopped by their commands already.
  std::fflush(stdout);
  std::_Exit(status);
}
