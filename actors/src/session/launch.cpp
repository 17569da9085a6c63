#include "session/state.hpp"

#include <iterator>

namespace sandbox::actors::session_detail {

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized_build = true;
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool sanitized_build = true;
#  else
constexpr bool sanitized_build = false;
#  endif
#else
constexpr bool sanitized_build = false;
#endif

} // namespace

/// The base environment of a contained session's commands (§4): a fixed
/// set, never the node's own variables (its credentials, its paths).
env_map contained_base_env(const env_map& node) {
  env_map env;
  auto path = node.find("PATH");
  env["PATH"] = path != node.end() && !path->second.empty()
                  ? path->second
                  : "/usr/local/bin:/usr/bin:/bin";
  // The session's private /tmp, whatever the node's TMPDIR names.
  env["TMPDIR"] = "/tmp";
  // A node built with a sanitizer passes its options on, so that the
  // instrumented programs it runs (the test helpers) report as it does.
  static constexpr const char* passed[]
    = {"LANG", "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"};
  constexpr size_t count = sanitized_build ? std::size(passed) : 1;
  for (size_t k = 0; k < count; ++k)
    if (auto i = node.find(passed[k]); i != node.end())
      env.insert(*i);
  return env;
}

const std::shared_ptr<const std::vector<std::string>>&
session_env_block(session_state& st) {
  if (!st.env_block) {
    env_map env = st.p.isolation == isolation_mode::contained
                    ? contained_base_env(st.p.rt->base_env())
                    : st.p.rt->base_env();
    env["HOME"] = st.p.home_directory;
    // The session's leased port (§18), where its servers listen: inside a
    // contained session the host's port is forwarded to it.
    if (st.p.lease)
      env["SANDBOX_PORT"] = std::to_string(st.p.lease->port());
    for (auto& [k, v] : st.p.env)
      env[k] = v;
    auto block = std::make_shared<std::vector<std::string>>();
    block->reserve(env.size());
    for (auto& [k, v] : env)
      block->push_back(k + "=" + v);
    st.env_block = std::move(block);
  }
  return st.env_block;
}

/// ... < per-call env, plus the marker entry: what a launch adds to the
/// session's block (`launch_spec::env`).
env_map call_env(const session_state& st, const env_map& call,
                 uint64_t exec_id) {
  env_map env = call;
  env[std::string{marker_variable}] = fmt::format("{}/{}/", st.p.id, exec_id);
  return env;
}

/// Makes the session's default home on first use (§18: private to the
/// user, never reached through a symlink).
result<void> ensure_home(session_state& st) {
  if (st.home_ready)
    return {};
  // An own home (`<user directory>/homes/<id>`) needs the user directory
  // above `homes` first; make_private_home makes `homes` and the home.
  if (st.p.own_home) {
    auto homes = st.p.home_directory.substr(0, st.p.home_directory.rfind('/'));
    auto user_dir = homes.substr(0, homes.rfind('/'));
    if (auto ok = make_private_directory(user_dir); !ok)
      return error{ok.error().code,
                   fmt::format("cannot prepare the home {}: {}",
                               st.p.home_directory, ok.error().message)};
  }
  if (auto ok = make_private_home(st.p.home_directory); !ok)
    return ok.error();
  st.home_ready = true;
  return {};
}

/// Validates `opts` and `command` and builds the launch (§2, §3): nothing
/// is spawned when any input is bad. The working directory itself is
/// checked by the launcher, once, with the errno of what failed.
result<launch_spec> prepare(session_state& st, const std::string& cmd,
                            const exec_options& opts, uint64_t exec_id) {
  if (auto ok = validate_command(cmd); !ok)
    return ok.error();
  if (auto ok = validate_env(opts.env); !ok)
    return ok.error();
  if (opts.timeout.count() < 0 || opts.timeout > max_exec_timeout)
    return error{errc::invalid_argument,
                 fmt::format("invalid exec_options.timeout {} ms: must be 0 "
                             "to {} ms (0 = none)",
                             opts.timeout.count(), max_exec_timeout.count())};
  if (!opts.cwd.empty())
    if (auto ok = fs::validate_path(opts.cwd); !ok)
      return error{errc::invalid_argument,
                   fmt::format("invalid exec_options.cwd: {}",
                               ok.error().message)};
  if (auto ok = ensure_home(st); !ok)
    return ok.error();
  launch_spec spec;
  spec.cwd = opts.cwd.empty() ? st.p.working_directory
                              : fs::resolve(st.p.working_directory, opts.cwd);
  spec.executable = st.p.rt->config().shell;
  spec.argv = {spec.executable, "-c", cmd};
  spec.env_block = session_env_block(st);
  spec.env = call_env(st, opts.env, exec_id);
  return spec;
}

/// The code runner (§7) with the language as its $0, validated before.
const std::string& code_runner() {
  static const std::string script = code_runner_script("$0");
  return script;
}

/// Refuses a cancel key that a running execution of the session holds: a
/// key names one execution, so `cancel` never has to guess.
result<void> check_cancel_key(const session_state& st, const std::string& key) {
  if (key.empty())
    return {};
  auto holds = [&](auto& x) { return x.second.cancel_key == key; };
  if (std::any_of(st.children.begin(), st.children.end(), holds)
      || std::any_of(st.executions.begin(), st.executions.end(), holds))
    return error{errc::invalid_argument,
                 fmt::format("cancel_key {} is already used by a running "
                             "execution of this session",
                             quote_for_message(key))};
  return {};
}

/// Forgets the spawned process `i` (its actor has its result or is gone).
void forget_child(session_state& st,
                  std::map<caf::actor_addr, session_child>::iterator i) {
  if (st.contained)
    st.contained->forget(i->second.pid);
  st.children.erase(i);
}

result<launched>
start(self_ptr self, result<launch_spec> spec, const exec_options& opts,
      chunk_sink sink, uint64_t exec_id,
      std::optional<std::string> initial_stdin, bool keep_stdin) {
  auto& st = self->state;
  if (!spec)
    return spec.error();
  if (auto ok = check_cancel_key(st, opts.cancel_key); !ok)
    return ok.error();
  // §1: commands run with stdin closed (/dev/null); code gets its source on
  // stdin; spawned processes keep a stdin pipe.
  spec->pipe_stdin = keep_stdin || initial_stdin.has_value();
  spec->dev_null = st.p.rt->dev_null();
  if (st.cgroups)
    spec->cgroup_held = st.cgroups->take();
  if (spec->cgroup_held) {
    spec->cgroup = spec->cgroup_held->path();
  } else {
    auto cgroup = st.p.rt->execution_cgroup(st.p.id, exec_id);
    if (!cgroup)
      return cgroup.error();
    // Held open for the session's next executions; one that cannot be
    // opened is launched by its path (the launch names what failed) and
    // removed at the reap.
    if (!cgroup->empty())
      if (auto held = held_cgroup::open(*cgroup, st.p.rt->held_cgroups()))
        spec->cgroup_held = std::move(*held);
    spec->cgroup = std::move(*cgroup);
  }
  if (spec->cgroup_held) {
    if (!st.cgroups)
      st.cgroups = std::make_shared<cgroup_pool>();
    spec->cgroup_reuse = st.cgroups;
  }
  // A contained session's namespaces are made before its first command.
  std::optional<containment::launch> window;
  if (st.contained) {
    if (auto ok = st.contained->start(); !ok)
      return ok.error();
    st.contained->prepare(*spec);
    window.emplace(*st.contained);
  }
  // The counters before the child exists: read after it, a fork bomb could
  // have hit the limit already and the growth would go unseen.
  session_limits::counters limits_before;
  if (st.contained && st.contained->limits())
    limits_before = st.contained->limits()->read();
  // The watchdog kills the node's cgroups: a child born in one needs no
  // record of its group.
  auto child = st.p.rt->reaper()->launch_owned(
    [&] { return child_process::start(st.p.rt->reactor(), *spec); },
    spec->cgroup.empty() || !st.p.rt->cgroups_watched());
  if (!child)
    return child.error();
  using execution_detail::take_params;
  process_params params;
  params.rt = st.p.rt;
  params.child = *child;
  params.sink = std::move(sink);
  params.timeout = opts.timeout;
  params.output_cap = opts.output_cap > 0 ? opts.output_cap
                                          : st.p.rt->config().output_cap;
  params.marker_prefix = fmt::format("{}={}/{}/", marker_variable, st.p.id,
                                     exec_id);
  params.initial_stdin = std::move(initial_stdin);
  params.spawned = keep_stdin;
  params.session = self->address();
  params.session_id = st.p.id;
  params.exec = exec_id;
  if (st.contained) {
    params.limits = st.contained->limits();
    params.limits_before = limits_before;
  }
  auto pid = (*child)->pid();
  auto kind = keep_stdin ? "spawn" : params.initial_stdin ? "code" : "run";
  log::logger()->debug("{} launched pid {} ({})", log::tag{st.p.id, exec_id},
                       pid, kind);
  auto listener = (*child)->take_watch_listener();
  launched out;
  out.pid = pid;
  out.exec = exec_id;
  // An execution is the session's own; a spawned process gets an actor.
  // Either is registered with the containment before it starts: the
  // violations its child caused so far go with its parameters.
  auto make = [&](std::vector<violation> early) {
    params.early_violations = std::move(early);
    if (keep_stdin) {
      out.handle = spawn_process(self->system(), std::move(params));
      return violations_to(out.handle, *st.p.rt);
    }
    auto& x = st.executions[exec_id];
    take_params(x, std::move(params));
    x.pid = pid;
    x.cancel_key = opts.cancel_key;
    return violations_to<session_actor_impl>(*st.self_target);
  };
  containment::execution_receiver receiver;
  if (window)
    window->attach(pid, exec_id, spec->cgroup,
                   [&](std::vector<violation> early) {
                     receiver = make(std::move(early));
                     return receiver;
                   });
  else
    receiver = make({});
  window.reset();
  if (listener && st.contained)
    st.contained->watch(std::move(listener), exec_id, std::move(receiver));
  if (keep_stdin) {
    self->monitor(out.handle);
    st.children.emplace(out.handle.address(),
                        session_child{out.handle, pid, opts.cancel_key});
  }
  st.groups.push_back(pid);
  return out;
}

} // namespace sandbox::actors::session_detail
