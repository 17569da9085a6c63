// A contained session's containment (sandbox/contain/containment.hpp) as
// the session actor holds it: made when the session starts, its violations
// sent to the session, or to a spawned process's actor while it lives.

#include "session/state.hpp"

namespace sandbox::actors::session_detail {

result<void> make_containment(session_state& st) {
  if (st.p.isolation != isolation_mode::contained)
    return {};
  containment_settings cs;
  cs.session_id = st.p.id;
  cs.working_directory = st.p.working_directory;
  cs.home_directory = st.p.home_directory;
  cs.deny = st.p.deny;
  cs.allow_read = st.p.allow_read;
  cs.allow_write = st.p.allow_write;
  cs.limits = st.p.limits;
  cs.id_base = st.p.rt->config().isolation_uid_base;
  cs.id_count = st.p.rt->config().isolation_uid_count;
  cs.allow_net = st.p.allow_net;
  cs.session_cgroup = st.p.rt->session_cgroup(st.p.id);
  if (!cs.session_cgroup.empty())
    cs.cgroup_root = st.p.rt->cgroups()->process_root();
  cs.temp_directory = st.p.rt->config().temp_directory;
  cs.guard = [rt = st.p.rt] { return rt->read_guard(); };
  st.contained = containment::make(st.p.rt->reactor(), std::move(cs),
                                   [session = *st.self_target](violation v) {
                                     send_if_alive<session_actor_impl>(
                                       session, violations_atom_v,
                                       std::vector<violation>{std::move(v)});
                                   });
  if (!st.p.host_listener || !*st.p.host_listener || !st.p.lease)
    return {};
  return st.contained->forward_port(std::move(*st.p.host_listener),
                                    st.p.lease->port());
}

containment::execution_receiver violations_to(const process_actor_impl& handle,
                                              runtime& rt) {
  return violations_to<process_actor_impl>(weak_target{
    caf::weak_actor_ptr{caf::actor_cast<caf::strong_actor_ptr>(handle).get()},
    rt.gate()});
}

result<std::shared_ptr<const fs::session_view>>
contained_view(session_state& st) {
  if (!st.contained)
    return std::shared_ptr<const fs::session_view>{};
  if (auto ok = ensure_home(st); !ok)
    return ok.error();
  return st.contained->view();
}

} // namespace sandbox::actors::session_detail
