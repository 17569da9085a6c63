#include "session/state.hpp"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <tuple>

namespace sandbox::actors {

namespace {

/// `path` without symbolic links; an error when it does not exist.
result<std::string> existing_path(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr)
    return make_errno_error(errno, path);
  std::string out{real};
  std::free(real);
  return out;
}

} // namespace

std::vector<std::string> allowlist_to_resolve(const runtime& rt,
                                              const session_config& cfg) {
  auto isolation = cfg.isolation ? *cfg.isolation : rt.config().isolation;
  if (isolation != isolation_mode::contained)
    return {};
  return cfg.allow_net ? *cfg.allow_net : rt.config().allow_net;
}

result<session_params>
make_session_params(runtime_ptr rt, const session_config& cfg,
                    const std::string& base_directory,
                    const result<std::vector<net_destination>>* allow) {
  for (auto [name, path] :
       {std::pair{"working_directory", &cfg.working_directory},
        std::pair{"home_directory", &cfg.home_directory}})
    if (!path->empty())
      if (auto ok = fs::validate_path(*path); !ok)
        return error{errc::invalid_argument,
                     fmt::format("invalid session_config.{}: {}", name,
                                 ok.error().message)};
  if (auto ok = validate_env(cfg.env); !ok)
    return ok.error();
  auto cwd = current_directory();
  if (!cwd)
    return cwd.error();
  if (cfg.allow_net)
    for (auto& entry : *cfg.allow_net)
      if (auto ok = validate_allow_entry(entry); !ok)
        return error{errc::invalid_argument,
                     fmt::format("invalid session_config.allow_net: {}",
                                 ok.error().message)};
  session_params p;
  p.isolation = cfg.isolation ? *cfg.isolation : rt->config().isolation;
  for (auto [name, paths] : {std::pair{"allow_read", &cfg.allow_read},
                             std::pair{"allow_write", &cfg.allow_write}})
    if (p.isolation != isolation_mode::contained && !paths->empty())
      return error{errc::invalid_argument,
                   fmt::format("session_config.{} ({}) applies to contained "
                               "sessions only: this one is {}",
                               name, paths->front(), to_string(p.isolation))};
  if (p.isolation != isolation_mode::contained && cfg.allow_net
      && !cfg.allow_net->empty())
    return error{errc::invalid_argument,
                 fmt::format("session_config.allow_net ({}) applies to "
                             "contained sessions only: this one is {}",
                             cfg.allow_net->front(), to_string(p.isolation))};
  if (p.isolation == isolation_mode::contained) {
    auto& limits = cfg.limits ? *cfg.limits : rt->config().limits;
    auto missing = host_isolation().missing(limits);
    if (missing.empty() && (limits.memory > 0 || limits.processes > 0)
        && rt->containment() != containment_mode::cgroup)
      missing = "the cgroup mode (for a memory or process limit)";
    // Say which limits the session asked (or got from the node), and how
    // to do without them.
    if (!missing.empty() && (limits.memory > 0 || limits.processes > 0))
      missing += fmt::format("; the session's limits are memory {} bytes "
                             "and processes {} (0 lifts one)",
                             limits.memory, limits.processes);
    if (!missing.empty())
      return error{errc::unsupported,
                   fmt::format("cannot create a contained session: this "
                               "host lacks {}",
                               missing)};
    p.limits = limits;
    // Names are looked up once, by the caller or here (see
    // docs/security.md).
    std::optional<result<std::vector<net_destination>>> here;
    if (allow == nullptr)
      allow = &here.emplace(resolve_allowlist(allowlist_to_resolve(*rt, cfg)));
    if (!*allow)
      return error{errc::invalid_argument,
                   fmt::format("invalid session_config.allow_net: {}",
                               allow->error().message)};
    p.allow_net = **allow;
    auto& rc = rt->config();
    for (auto [name, into, node, own] :
         {std::tuple{"allow_read", &p.allow_read, &rc.isolation_allow_read,
                     &cfg.allow_read},
          std::tuple{"allow_write", &p.allow_write, &rc.isolation_allow_write,
                     &cfg.allow_write}})
      for (auto* list : {node, own})
        for (auto& path : *list) {
          auto real = existing_path(fs::resolve(*cwd, path));
          if (!real)
            return error{errc::invalid_argument,
                         fmt::format("invalid session_config.{} {}: {}", name,
                                     quote_for_message(path),
                                     real.error().message)};
          into->push_back(std::move(*real));
        }
    p.deny = rc.isolation_deny;
    // The shared home of the none sessions and the own homes of the other
    // contained sessions (its own is kept below `homes`, as a working
    // directory below the base directory).
    auto& temp = rt->config().temp_directory;
    p.deny.push_back(fs::resolve(*cwd, default_home(temp)));
    p.deny.push_back(fs::resolve(*cwd, user_directory(temp) + "/homes"));
    if (!base_directory.empty())
      p.deny.push_back(fs::resolve(*cwd, base_directory));
  }
  p.id = make_uuid_v4();
  std::string requested = cfg.working_directory;
  if (requested.empty() && !base_directory.empty()) {
    requested = base_directory + "/" + p.id;
    p.own_working_directory = true;
  } else if (requested.empty()) {
    requested = ".";
  }
  auto wd = make_directories(fs::resolve(*cwd, requested), "working directory");
  if (!wd)
    return wd.error();
  if (cfg.home_directory.empty()) {
    // Made, private, at the first execution (ensure_home). A contained
    // session gets one of its own, so that nothing it leaves in its home
    // reaches another session, contained or not (docs/security.md).
    auto& temp = rt->config().temp_directory;
    p.home_directory = fs::resolve(
      *cwd, p.isolation == isolation_mode::contained
              ? fmt::format("{}/homes/{}", user_directory(temp), p.id)
              : default_home(temp));
    p.private_home = true;
    p.own_home = p.isolation == isolation_mode::contained;
  } else {
    auto hd = make_directories(fs::resolve(*cwd, cfg.home_directory),
                               "home directory");
    if (!hd)
      return hd.error();
    p.home_directory = std::move(*hd);
  }
  p.rt = std::move(rt);
  p.working_directory = std::move(*wd);
  p.env = cfg.env;
  return p;
}

} // namespace sandbox::actors
