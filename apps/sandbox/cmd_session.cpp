// `sandbox session create|list|stop`: the session lifecycle (§18–§22).
// Without --node the embedded node serves, so a created session is shown
// and stopped when the CLI exits; on a remote node (--node) a created
// session persists (detached) until `session stop`.

#include <fmt/format.h>

#include "cli.hpp"
#include "sandbox/net/endpoint.hpp"

namespace sandbox::cli {

namespace {

struct create_flags {
  std::string workdir;
  std::string home;
  std::vector<std::string> env;
};

nlohmann::ordered_json to_json(const actors::session_info& info,
                               const std::string& node = {}) {
  auto j = wire::session_json(info);
  if (!node.empty())
    j["node"] = node;
  return j;
}

void print_info(const global_options& g, const actors::session_info& info,
                const std::string& node = {}) {
  if (g.json) {
    print_json(to_json(info, node));
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
  if (!node.empty())
    emit(1, fmt::format("node               {}\n", escape_control(node)));
}

/// Parses the flags of `session create` into a config.
result<actors::session_config> to_config(const create_flags& flags,
                                         bool remote) {
  actors::session_config cfg;
  // On a remote node the CLI's directory means nothing: the node makes a
  // directory of its own unless --workdir says otherwise.
  cfg.working_directory = flags.workdir.empty() && !remote ? "."
                                                           : flags.workdir;
  cfg.home_directory = flags.home;
  cfg.detached = remote;
  for (auto& entry : flags.env) {
    auto kv = parse_env_entry(entry);
    if (!kv)
      return kv.error();
    cfg.env[kv->first] = kv->second;
  }
  return cfg;
}

/// `err` with the hint `--session ID` gives without --node: the embedded
/// node never knows a session another CLI made.
sandbox::error embedded_hint(sandbox::error err) {
  if (err.code == errc::session_not_found)
    err.message += " (sessions persist only on a remote node)";
  return err;
}

void print_list_entry(const global_options& g, const actors::session_info& info,
                      const std::string& node = {}) {
  if (g.json) {
    print_json(to_json(info, node));
    return;
  }
  emit(1, fmt::format(
            "{}  {}  port {}  {} children{}\n", escape_control(info.id),
            escape_control(info.working_directory), info.port, info.children,
            node.empty() ? std::string{} : "  node " + escape_control(node)));
}

void print_receipt(const global_options& g, const std::string& id,
                   const stop_receipt& receipt) {
  if (g.json) {
    nlohmann::ordered_json j{{"type", "stopped"}};
    put_path(j, "id", id);
    j["ended"] = receipt.ended;
    j["killed"] = receipt.killed;
    j["survivors"] = receipt.survivors;
    j["containment"] = to_string(receipt.mode);
    print_json(j);
  } else
    // The process-group mode cannot see a descendant that left its group
    // and cleared its marker: its count is qualified, never bare.
    emit(1, fmt::format("stopped {}: {} ended, {} killed, {} survivors{}\n",
                        escape_control(id), receipt.ended, receipt.killed,
                        receipt.survivors,
                        receipt.mode == containment_mode::cgroup
                          ? " (cgroup)"
                          : " (process groups only)"));
}

/// `session create|list|stop` on the remote nodes of --node.
int run_remote(const global_options& g, const create_flags& flags,
               CLI::App* create, CLI::App* list, const std::string& stop_id) {
  if (create->parsed()) {
    auto cfg = to_config(flags, true);
    if (!cfg)
      return usage_error(g, cfg.error().message);
    apply_isolation(g, *cfg);
    auto pool = remote_nodes(g);
    if (!pool)
      return report(g, pool.error());
    auto created = (*pool)->create(std::move(*cfg));
    if (!created)
      return report(g, created.error());
    auto info = created->first.info();
    if (!info)
      return report(g, info.error());
    print_info(g, *info, created->second->address());
    return exit_ok;
  }
  auto pool = remote_nodes(g);
  if (!pool)
    return report(g, pool.error());
  if (list->parsed()) {
    auto sessions = (*pool)->list();
    if (!sessions)
      return report(g, sessions.error());
    for (auto& s : *sessions)
      print_list_entry(g, s.info, s.address);
    return exit_ok;
  }
  auto receipt = (*pool)->stop_session(stop_id);
  if (!receipt)
    return report(g, receipt.error());
  print_receipt(g, stop_id, *receipt);
  return exit_ok;
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
                     "working directory (default: the current directory; "
                     "on a remote node, a new directory under the node's "
                     "base directory)");
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
    if (!g.nodes.empty())
      return run_remote(g, *flags, create, list, *stop_id);
    auto& node = embedded();
    if (create->parsed()) {
      auto cfg = to_config(*flags, false);
      if (!cfg)
        return usage_error(g, cfg.error().message);
      apply_isolation(g, *cfg);
      auto s = actors::blocking_session::create(node, std::move(*cfg));
      if (!s)
        return report(g, s.error());
      auto info = s->info();
      if (!info)
        return report(g, info.error());
      print_info(g, *info);
      // Embedded: the session lives as long as this CLI. Say so, or the
      // printed id looks like one to use later.
      (void) s->stop();
      emit(2, fmt::format("sandbox: note: session {} is already stopped: "
                          "without --node a session ends with the command "
                          "(sessions persist only on a remote node)\n",
                          escape_control(info->id)));
      return exit_ok;
    }
    if (list->parsed()) {
      auto sessions = node.list();
      if (!sessions)
        return report(g, sessions.error());
      for (auto& info : *sessions)
        print_list_entry(g, info);
      return exit_ok;
    }
    if (stop->parsed()) {
      auto receipt = node.stop_session(*stop_id);
      if (!receipt)
        return report(g, embedded_hint(receipt.error()));
      print_receipt(g, *stop_id, *receipt);
      return exit_ok;
    }
    return exit_usage;
  };
  return cmd;
}

} // namespace sandbox::cli
