// `sandbox session create|list|stop`: the session lifecycle (R18–R22).
// Without --node the embedded node serves, so a created session is shown
// and stopped when the CLI exits; persistent sessions need a remote node.

#include <fmt/format.h>

#include "cli.hpp"
#include "sandbox/endpoint.hpp"

namespace sandbox::cli {

namespace {

struct create_flags {
  std::string workdir;
  std::string home;
  std::vector<std::string> env;
};

nlohmann::ordered_json to_json(const actors::session_info& info) {
  auto endpoint = port_endpoint(info.port);
  return {{"id", info.id},
          {"working_directory", info.working_directory},
          {"home_directory", info.home_directory},
          {"port", info.port},
          {"endpoint", endpoint ? *endpoint : std::string{}},
          {"children", info.children}};
}

void print_info(const global_options& g, const actors::session_info& info) {
  if (g.json) {
    auto j = to_json(info);
    j.erase("children");
    print_json(j);
    return;
  }
  auto endpoint = port_endpoint(info.port);
  write_fd(1, fmt::format("id                 {}\n"
                          "working_directory  {}\n"
                          "home_directory     {}\n"
                          "port               {}\n"
                          "endpoint           {}\n",
                          info.id, info.working_directory,
                          info.home_directory, info.port,
                          endpoint ? *endpoint : std::string{}));
}

int remote_unsupported(const global_options& g) {
  return report(g, {errc::unsupported,
                    fmt::format("--node {}: remote nodes are not supported "
                                "by this build yet",
                                g.node)});
}

} // namespace

command add_session(CLI::App& app, global_options& g) {
  command cmd;
  cmd.sub = app.add_subcommand("session", "create, list and stop sessions");
  cmd.sub->require_subcommand(1);
  auto flags = std::make_shared<create_flags>();
  auto create = cmd.sub->add_subcommand(
    "create", "create a session and print its id, directories and port");
  create->add_option("--workdir", flags->workdir,
                     "working directory (default: a new one)");
  create->add_option("--home", flags->home,
                     "home directory (default: $TMPDIR/sandbox/home)");
  create->add_option("--env", flags->env, "K=V for every command");
  auto list = cmd.sub->add_subcommand("list", "list the node's sessions");
  auto stop = cmd.sub->add_subcommand("stop", "stop a session");
  auto stop_id = std::make_shared<std::string>();
  stop->add_option("id", *stop_id, "session id")->required();
  cmd.run = [&g, flags, create, list, stop, stop_id] {
    if (!g.node.empty())
      return remote_unsupported(g);
    auto& node = embedded();
    if (create->parsed()) {
      actors::session_config cfg;
      cfg.working_directory = flags->workdir.empty() ? "." : flags->workdir;
      cfg.home_directory = flags->home;
      for (auto& entry : flags->env) {
        auto kv = parse_env_entry(entry);
        if (!kv)
          return report(g, kv.error());
        cfg.env[kv->first] = kv->second;
      }
      auto s = actors::blocking_session::create(node, cfg);
      if (!s)
        return report(g, s.error());
      auto info = s->info();
      if (!info)
        return report(g, info.error());
      print_info(g, *info);
      // Embedded: the session lives as long as this CLI.
      (void) s->stop();
      return exit_ok;
    }
    if (list->parsed()) {
      auto sessions = node.list();
      if (!sessions)
        return report(g, sessions.error());
      for (auto& info : *sessions) {
        if (g.json)
          print_json(to_json(info));
        else
          write_fd(1, fmt::format("{}  {}  port {}  {} children\n", info.id,
                                  info.working_directory, info.port,
                                  info.children));
      }
      return exit_ok;
    }
    if (stop->parsed()) {
      auto receipt = node.stop_session(*stop_id);
      if (!receipt)
        return report(g, receipt.error());
      if (g.json)
        print_json({{"type", "stopped"},
                    {"id", *stop_id},
                    {"ended", receipt->ended},
                    {"killed", receipt->killed},
                    {"survivors", receipt->survivors}});
      else
        write_fd(1, fmt::format("stopped {}: {} ended, {} killed, {} "
                                "survivors\n",
                                *stop_id, receipt->ended, receipt->killed,
                                receipt->survivors));
      return exit_ok;
    }
    return exit_usage;
  };
  return cmd;
}

} // namespace sandbox::cli
