#include "session/state.hpp"

namespace sandbox::actors::session_detail {

/// Closes every forwarder of the session (their sockets are closed when
/// this returns).
void stop_network(session_state& st) {
  if (st.inbound)
    st.inbound->stop();
  st.inbound = nullptr;
  for (auto& f : st.outbound)
    f->stop();
  st.outbound.clear();
}

/// The host's leased port, listened on since the session was made,
/// forwarded to 127.0.0.1:<port> inside: until the init exists, its
/// connections are reset (nothing can listen inside yet).
result<void> start_inbound(session_state& st) {
  if (!st.p.host_listener || !*st.p.host_listener || !st.p.lease)
    return {};
  sockaddr_in dest{};
  dest.sin_family = AF_INET;
  dest.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  dest.sin_port = htons(st.p.lease->port());
  auto f = tcp_forwarder::start(
    st.p.rt->reactor(), std::move(*st.p.host_listener),
    reinterpret_cast<sockaddr*>(&dest), sizeof(dest), nullptr,
    fmt::format("{} port {}", log::tag{st.p.id}, st.p.lease->port()));
  if (!f)
    return f.error();
  st.inbound = std::move(*f);
  return {};
}

/// The network of a new init: the inbound forwarder reaches inside, and
/// each allowed destination gets its address on the session's loopback
/// and a listener there, forwarded to the real destination from the host.
result<void> start_network(session_state& st, contained_session& c) {
  // The forwarders' sockets are made from their own copy of the pidfd.
  auto pidfd
    = std::make_shared<unique_fd>(::fcntl(c.init_pidfd(), F_DUPFD_CLOEXEC, 3));
  if (!*pidfd)
    return make_errno_error(errno, "dup of the session init's pidfd");
  if (st.inbound)
    st.inbound->set_factory([pidfd] {
      return socket_in_namespace(pidfd->get(), AF_INET, SOCK_STREAM);
    });
  for (auto& d : st.p.allow_net) {
    auto what = fmt::format("{}:{} in the session (allowed by {})", d.address,
                            d.port, d.entry);
    if (auto ok = add_local_address(pidfd->get(), d); !ok)
      return ok.error();
    auto inside = socket_in_namespace(pidfd->get(), d.addr.ss_family,
                                      SOCK_STREAM);
    if (!inside)
      return inside.error();
    auto listener = listen_tcp(reinterpret_cast<const sockaddr*>(&d.addr),
                               d.addr_len, what, std::move(*inside));
    if (!listener)
      return listener.error();
    auto family = d.addr.ss_family;
    auto f = tcp_forwarder::start(
      st.p.rt->reactor(), std::move(*listener),
      reinterpret_cast<const sockaddr*>(&d.addr), d.addr_len,
      [family]() -> result<unique_fd> {
        unique_fd fd{::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
        if (!fd)
          return make_errno_error(errno, "socket (to an allowed "
                                         "destination)");
        return fd;
      },
      fmt::format("{} to {}:{}", log::tag{st.p.id}, d.address, d.port));
    if (!f)
      return f.error();
    st.outbound.push_back(std::move(*f));
  }
  return {};
}

result<void> cover_denied(session_state& st, containment_spec& spec);

/// A contained session's namespaces, made once, before its first command:
/// the init lives in `<session cgroup>/init` (only leaves hold processes),
/// the cgroup limits go on the session's cgroup.
result<void> ensure_contained(session_state& st) {
  if (st.p.isolation != isolation_mode::contained || st.contained)
    return {};
  containment_spec spec;
  spec.working_directory = st.p.working_directory;
  spec.home_directory = st.p.home_directory;
  spec.deny = st.p.deny;
  spec.limits = st.p.limits;
  auto session_cgroup = st.p.rt->session_cgroup(st.p.id);
  if (!session_cgroup.empty()) {
    spec.cgroup = session_cgroup + "/init";
    // With its parents: a file operation may come before any execution.
    if (auto ok = fs::make_directories(spec.cgroup, 0755); !ok)
      return error{errc::io_error,
                   fmt::format("cannot make cgroup {}: {}", spec.cgroup,
                               ok.error().message)};
  }
  auto limits = session_limits::make(
    st.p.limits,
    session_cgroup.empty() ? std::string{} : st.p.rt->cgroups()->process_root(),
    session_cgroup, st.p.id);
  if (!limits)
    return limits.error();
  st.cgroup_limits = *limits;
  spec.cgroup_limits = st.cgroup_limits;
  if (auto ok = cover_denied(st, spec); !ok)
    return ok.error();
  auto s = contained_session::start(spec);
  if (!s) {
    st.read_cover.reset();
    return s.error();
  }
  (*s)->reap_on(st.p.rt->reactor());
  if (auto ok = start_network(st, **s); !ok) {
    for (auto& f : st.outbound)
      f->stop();
    st.outbound.clear();
    if (st.inbound)
      st.inbound->set_factory(nullptr);
    s->reset();
    st.read_cover.reset();
    return ok.error();
  }
  st.contained = std::move(*s);
  return {};
}

/// Where a contained session's commands and file operations may write (the
/// Landlock rules of its commands).
std::vector<std::string> writable_directories(const session_state& st) {
  return {st.p.working_directory, st.p.home_directory, "/tmp", "/dev/shm"};
}

weak_target weak_process(const process_actor_impl& handle, runtime& rt) {
  return {
    caf::weak_actor_ptr{caf::actor_cast<caf::strong_actor_ptr>(handle).get()},
    rt.gate()};
}

/// Gives `v` to the execution's process actor while it lives (its result
/// carries it), else to the session. Called on reactor threads.
void report_violation(const weak_target* process, const weak_target& session,
                      violation v) {
  std::vector<violation> one{std::move(v)};
  bool sent = false;
  sandbox::detail::tsan_release_handover();
  if (process != nullptr)
    process->gate->run([&] {
      if (auto strong = process->actor.lock()) {
        caf::anon_send(caf::actor_cast<process_actor_impl>(strong),
                       violations_atom_v, one);
        sent = true;
      }
    });
  if (!sent)
    send_if_alive<session_actor_impl>(session, violations_atom_v, one);
}

/// Places the node's placeholders over a contained session's denied paths
/// where the host lets the node watch their opens (read_guard.hpp): each
/// refused read is a `read_denied` violation of the execution whose process
/// group read it (of the session, execution 0, when none matches).
result<void> cover_denied(session_state& st, containment_spec& spec) {
  auto guard = st.p.rt->read_guard();
  if (!guard || spec.deny.empty())
    return {};
  auto cover = guard->make_cover(
    st.p.rt->config().temp_directory, spec.deny,
    [running = st.running, session = *st.self_target](denied_read d) {
      violation v{violation_kind::read_denied, 0, std::move(d.path)};
      std::optional<weak_target> process;
      {
        std::lock_guard<std::mutex> guard{running->mtx};
        auto i = running->by_group.find(d.pgid);
        if (i != running->by_group.end()) {
          v.execution = i->second.first;
          process = i->second.second;
        } else if (running->launching > 0) {
          running->unclaimed[d.pgid].push_back(std::move(v));
          return;
        }
      }
      report_violation(process ? &*process : nullptr, session, std::move(v));
    },
    {spec.working_directory, spec.home_directory});
  if (!cover)
    return cover.error();
  spec.placeholders = (*cover)->placeholders();
  spec.mounts = (*cover)->mounts();
  st.read_cover = std::move(*cover);
  return {};
}

/// Reports what the seccomp filter of a contained command sees that
/// Landlock or the network namespace will refuse: to the execution's
/// process actor while it lives (its result carries them), else to the
/// session.
void watch_execution(self_ptr self, const process_actor_impl& handle,
                     uint64_t exec_id, unique_fd listener) {
  auto& st = self->state;
  auto policy = std::make_shared<watch_policy>();
  policy->writable = writable_directories(st);
  policy->execution = exec_id;
  auto process = weak_process(handle, *st.p.rt);
  watch_syscalls(st.p.rt->reactor(), std::move(listener), std::move(policy),
                 [process, session = *st.self_target](violation v) {
                   report_violation(&process, session, std::move(v));
                 });
}

/// What the filesystem worker of a contained session sees: the session's
/// mount namespace (its init starts here when no command ran yet), with
/// the write rules of its commands and its denied paths refused by name.
/// None for other sessions.
result<std::shared_ptr<const fs::session_view>>
contained_view(session_state& st) {
  if (st.p.isolation != isolation_mode::contained)
    return std::shared_ptr<const fs::session_view>{};
  if (auto ok = ensure_home(st); !ok)
    return ok.error();
  if (auto ok = ensure_contained(st); !ok)
    return ok.error();
  fs::view_policy policy;
  policy.deny = st.p.deny;
  policy.kept = {st.p.working_directory, st.p.home_directory};
  policy.writable = writable_directories(st);
  return fs::session_view::open(
    fmt::format("/proc/{}/root", st.contained->init_pid()), std::move(policy));
}

} // namespace sandbox::actors::session_detail
