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
  nlohmann::ordered_json j{{"type", "session"}, {"id", info.id}};
  put_path(j, "working_directory", info.working_directory);
  put_path(j, "home_directory", info.home_directory);
  j["port"] = info.port;
  j["endpoint"] = endpoint ? *endpoint : std::string{};
  j["children"] = info.children;
  return j;
}

void print_info(const global_options& g, const actors::session_info& info) {
  if (g.json) {
    print_json(to_json(info));
    return;
  }
  auto endpoint = port_endpoint(info.port);
  emit(1, fmt::format("id                 {}\n"
                      "working_directory  {}\n"
                      "home_directory     {}\n"
                      "port               {}\n"
                      "endpoint           {}\n",
                      escape_control(info.id),
                      escape_control(info.working_directory),
                      escape_control(info.home_directory), info.port,
                      endpoint ? *endpoint : std::string{}));
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
                     "working directory (default: the current directory)");
  create->add_option("--home", flags->home,
                     "home directory (default: the node's, see "
                     "docs/cli.md)");
  create
    ->add_option("--env", flags->env,
                 "NAME=VALUE for every command; repeat it or give "
                 "several")
    ->allow_extra_args(false);
  for (auto* sub : {cmd.sub, create})
    sub->footer(global_options_footer);
  auto list = cmd.sub->add_subcommand("list", "list the node's sessions");
  auto stop = cmd.sub->add_subcommand("stop", "stop a session");
  list->footer(global_options_footer);
  stop->footer(global_options_footer);
  auto stop_id = std::make_shared<std::string>();
  stop->add_option("id", *stop_id, "session id")->required();
  cmd.run = [&g, flags, create, list, stop, stop_id] {
    if (!g.node.empty())
      return report(g, remote_unsupported(g));
    auto& node = embedded();
    if (create->parsed()) {
      actors::session_config cfg;
      cfg.working_directory = flags->workdir.empty() ? "." : flags->workdir;
      cfg.home_directory = flags->home;
      for (auto& entry : flags->env) {
        auto kv = parse_env_entry(entry);
        if (!kv)
          return usage_error(g, kv.error().message);
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
          emit(1, fmt::format("{}  {}  port {}  {} children\n",
                              escape_control(info.id),
                              escape_control(info.working_directory), info.port,
                              info.children));
      }
      return exit_ok;
    }
    if (stop->parsed()) {
      auto receipt = node.stop_session(*stop_id);
      if (!receipt)
        return report(g, receipt.error());
      if (g.json) {
        nlohmann::ordered_json j{{"type", "stopped"}};
        put_path(j, "id", *stop_id);
        j["ended"] = receipt->ended;
        j["killed"] = receipt->killed;
        j["survivors"] = receipt->survivors;
        print_json(j);
      } else
        emit(1, fmt::format("stopped {}: {} ended, {} killed, {} "
                            "survivors\n",
                            escape_control(*stop_id), receipt->ended,
                            receipt->killed, receipt->survivors));
      return exit_ok;
    }
    return exit_usage;
  };
  return cmd;
}

} // namespace sandbox::cli
