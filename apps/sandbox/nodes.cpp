// The nodes and sessions a subcommand works with: the embedded node, the
// remote nodes of --node, and the session a command runs in.

#include "cli.hpp"

#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "interrupt.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/client/embedded_node.hpp"

namespace sandbox::cli {

// -- sessions -----------------------------------------------------------------

actors::tls_config tls_of(const global_options& g) {
  return {g.tls_cert, g.tls_key, g.tls_ca};
}

std::optional<int> check_tls(const global_options& g) {
  for (auto& node : g.nodes)
    if (auto addr = actors::parse_node_address(node); !addr)
      return usage_error(g, "--node: " + addr.error().message);
  auto tls = tls_of(g);
  if (!tls.enabled())
    return std::nullopt;
  if (g.tls_cert.empty() || g.tls_key.empty() || g.tls_ca.empty())
    return usage_error(g, actors::validate(tls).error().message);
  if (auto ok = actors::validate(tls); !ok)
    return report(g, ok.error());
  return std::nullopt;
}

result<actors::node_pool*> remote_nodes(const global_options& g) {
  static std::optional<actors::node_pool> pool;
  if (!pool) {
    auto got = actors::node_pool::connect(g.nodes, tls_of(g));
    if (!got)
      return got.error();
    for (auto& err : got->unreachable())
      spdlog::info("{} (skipped)", err.message);
    pool.emplace(std::move(*got));
  }
  return &*pool;
}

actors::embedded_node& embedded() {
  static std::unique_ptr<actors::embedded_node> node = [] {
    actors::runtime_config cfg;
    // The CLI process is only a node: every orphan re-parented to it is
    // one of its sessions' descendants.
    cfg.reap_all_orphans = true;
    return std::make_unique<actors::embedded_node>(cfg);
  }();
  return *node;
}

namespace {

/// `paths` made absolute against the CLI's directory (a remote node
/// resolves them on its own host).
std::vector<std::string> absolute_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (auto& p : paths)
    out.push_back(std::filesystem::absolute(p).lexically_normal().string());
  return out;
}

} // namespace

void apply_isolation(const global_options& g, actors::session_config& cfg) {
  if (auto mode = parse_isolation(g.isolation); mode)
    cfg.isolation = *mode;
  if (!g.allow_net.empty())
    cfg.allow_net = g.allow_net;
  if (g.limits)
    cfg.limits = *g.limits;
  cfg.allow_read = absolute_paths(g.allow_read);
  cfg.allow_write = absolute_paths(g.allow_write);
}

result<acquired_session> acquire_session(const global_options& g,
                                         actors::session_config cfg) {
  apply_isolation(g, cfg);
  if (!g.nodes.empty()) {
    auto pool = remote_nodes(g);
    if (!pool)
      return pool.error();
    if (!g.session.empty()) {
      auto found = (*pool)->find(g.session);
      if (!found)
        return found.error();
      return acquired_session{std::move(found->first), false};
    }
    // A fresh session; without a working directory, a new one under the
    // node's base directory.
    auto created = (*pool)->create(std::move(cfg));
    if (!created)
      return created.error();
    return acquired_session{std::move(created->first), true};
  }
  if (!g.session.empty())
    return sandbox::error{errc::session_not_found,
                          fmt::format("no such session: {} (sessions persist "
                                      "only on a remote node)",
                                      g.session)};
  if (cfg.working_directory.empty())
    cfg.working_directory = ".";
  auto created = actors::blocking_session::create(embedded(), std::move(cfg));
  if (!created)
    return created.error();
  return acquired_session{std::move(*created), true};
}

int with_session(const global_options& g,
                 const std::function<int(actors::blocking_session&)>& body,
                 bool runs_commands) {
  auto acquired = acquire_session(g, {});
  if (!acquired)
    return report(g, acquired.error());
  // main exits with 128 + the signal once the stop is done.
  std::optional<interrupt_guard> wait_for_stop;
  if (runs_commands && acquired->owned)
    wait_for_stop.emplace([] {});
  auto status = body(acquired->session);
  if (acquired->owned)
    (void) acquired->session.stop();
  return status;
}

} // namespace sandbox::cli
