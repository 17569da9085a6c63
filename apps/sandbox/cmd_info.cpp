// `sandbox info`: what this build and the node that serves it can do:
// version, kernel, and how sessions' processes are held (the containment
// mode, docs/security.md).

#include <sys/utsname.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli.hpp"
#include "runtime.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/contain/isolation.hpp"
#include "sandbox/process/launcher.hpp"

#ifndef SANDBOX_VERSION
#  define SANDBOX_VERSION "unknown"
#endif

namespace sandbox::cli {

namespace {

/// The facts `info` prints, in order.
struct node_facts {
  std::string containment;
  /// Why the process-group mode is in force; empty in the cgroup mode.
  std::string detail;
  /// The node's cgroup directory (embedded node in the cgroup mode).
  std::string cgroup;
  std::string launch;
  /// HOST:PORT of a remote node; empty for the embedded node.
  std::string node;
  /// What the host gives contained sessions (embedded node only).
  const isolation_support* isolation = nullptr;
  /// The limits a contained session of the embedded node gets (its
  /// defaults, or --memory / --pids): what `contained` needs depends on
  /// them.
  isolation_limits limits;
  /// A remote node's: the isolation of the session `info` asked (the one
  /// `--session` names, else a new one: the node's default).
  std::string session_isolation;
  bool named_session = false;
};

/// The `isolation` object of `info --json`.
nlohmann::ordered_json isolation_json(const isolation_support& s,
                                      const isolation_limits& limits) {
  auto missing = s.missing(limits);
  nlohmann::ordered_json j{{"contained", missing.empty()},
                           {"namespaces", s.namespaces},
                           {"landlock_abi", s.landlock_abi},
                           {"cgroup_controllers", s.cgroup_controllers}};
  auto v1 = nlohmann::ordered_json::object();
  for (auto& [ctl, dir] : s.cgroup_v1)
    v1[ctl] = dir;
  j["cgroup_v1"] = v1;
  j["syscall_watch"] = s.syscall_watch;
  j["read_watch"] = s.read_watch;
  j["lookup_watch"] = s.lookup_watch;
  // Whether a session's root is a host uid of its own or the node's
  // (docs/security.md, "Identity").
  j["own_ids"] = s.own_ids;
  if (!s.own_ids)
    j["own_ids_detail"] = s.own_ids_detail;
  // Its /tmp and /dev/shm are its own: what it writes there is not on the
  // host (docs/security.md).
  j["private_tmp"] = missing.empty();
  if (!missing.empty())
    j["missing"] = missing;
  return j;
}

/// The `isolation` line of `info`.
std::string isolation_line(const isolation_support& s,
                           const isolation_limits& limits) {
  auto missing = s.missing(limits);
  auto controllers = fmt::format("{}", fmt::join(s.cgroup_controllers, " "));
  for (auto& [ctl, dir] : s.cgroup_v1)
    controllers += fmt::format("{}{} (v1)", controllers.empty() ? "" : " ",
                               ctl);
  if (!missing.empty())
    return fmt::format("none only (contained needs: {})", missing);
  return fmt::format("none, contained (Landlock ABI {}; cgroup controllers: "
                     "{}; a private /tmp each; {})",
                     s.landlock_abi, controllers.empty() ? "none" : controllers,
                     s.own_ids
                       ? "a host uid of its own each"
                       : fmt::format("the node's uid: {}", s.own_ids_detail));
}

std::string kernel_release() {
  struct utsname u;
  if (::uname(&u) != 0)
    return "unknown";
  return fmt::format("{} {} {}", u.sysname, u.release, u.machine);
}

/// The embedded node's facts, from its runtime.
node_facts embedded_facts() {
  auto& rt = *embedded().rt();
  node_facts f;
  f.containment = std::string{to_string(rt.containment())};
  f.detail = rt.containment_detail();
  f.cgroup = rt.cgroup_root();
  f.launch = std::string{launch_method()};
  f.isolation = &host_isolation();
  f.limits = rt.config().limits;
  return f;
}

/// A remote node's mode, as its sessions report it (an ephemeral session,
/// stopped again).
result<node_facts> remote_facts(const global_options& g) {
  node_facts f;
  auto s = acquire_session(g, {});
  if (!s)
    return s.error();
  auto info = s->session.info();
  if (s->owned)
    (void) s->session.stop();
  if (!info)
    return info.error();
  f.containment = std::string{to_string(info->containment)};
  f.node = g.nodes.size() == 1 ? g.nodes.front() : std::string{};
  f.session_isolation = std::string{to_string(info->isolation)};
  f.named_session = !s->owned;
  return f;
}

int run_info(const global_options& g) {
  auto facts = g.nodes.empty() ? result<node_facts>{embedded_facts()}
                               : remote_facts(g);
  if (!facts)
    return report(g, facts.error());
  auto& f = *facts;
  if (g.json) {
    nlohmann::ordered_json j{{"type", "info"},
                             {"version", SANDBOX_VERSION},
                             {"kernel", kernel_release()},
                             {"containment", f.containment}};
    if (!f.detail.empty())
      j["containment_detail"] = f.detail;
    if (!f.cgroup.empty())
      put_path(j, "cgroup", f.cgroup);
    if (!f.launch.empty())
      j["launch"] = f.launch;
    if (!f.node.empty())
      j["node"] = f.node;
    if (f.isolation != nullptr)
      j["isolation"] = isolation_json(*f.isolation, f.limits);
    if (!f.session_isolation.empty())
      j["session_isolation"] = f.session_isolation;
    print_json(j);
    return exit_ok;
  }
  auto line = [](std::string_view key, const std::string& value) {
    if (!value.empty())
      emit(1, fmt::format("{:<12} {}\n", key, escape_control(value)));
  };
  line("version", SANDBOX_VERSION);
  line("kernel", kernel_release());
  line("containment", f.containment);
  line("why", f.detail);
  line("cgroup", f.cgroup);
  line("launch", f.launch);
  line("node", f.node);
  if (f.isolation != nullptr)
    line("isolation", isolation_line(*f.isolation, f.limits));
  if (!f.session_isolation.empty())
    line("isolation",
         fmt::format("{} ({}{})", f.session_isolation,
                     f.named_session ? "this session's" : "a new session's",
                     f.session_isolation == "contained" ? "; a private /tmp"
                                                        : ""));
  return exit_ok;
}

} // namespace

command add_info(CLI::App& app, global_options& g) {
  auto* sub = app.add_subcommand("info", "version, kernel and how the node "
                                         "holds its sessions' processes "
                                         "(containment mode)");
  sub->footer(global_options_footer);
  return {sub, [&g] { return run_info(g); }};
}

} // namespace sandbox::cli
