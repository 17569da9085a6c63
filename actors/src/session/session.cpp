#include "session/state.hpp"

namespace sandbox::actors {

namespace session_detail {

caf::error session_stopped(const session_state& st) {
  return stopped_error(fmt::format("session {}", st.p.id));
}

/// The child's environment, lowest layer first (§4): node process env <
/// HOME < session env, built once per session (`launch_spec::env_block`)...

} // namespace session_detail

using namespace session_detail;

namespace {

/// Passes a request about process `id` on to its handle, which answers
/// it; the error of `find_process` when the session has no such process.
template <class R, class... Ts>
caf::result<R> to_process(self_ptr self, const std::string& id, Ts&&... xs) {
  auto h = find_process(self->state, id);
  if (!h)
    return std::move(h.error());
  return self->delegate(*h, std::forward<Ts>(xs)...);
}

} // namespace

session_actor_impl::behavior_type session_behavior(self_ptr self,
                                                   session_params params) {
  auto& st = self->state;
  st.p = std::move(params);
  st.home_ready = !st.p.private_home;
  st.marker_prefix = fmt::format("{}={}/", marker_variable, st.p.id);
  st.self_target = weak_self(self, *st.p.rt);
  if (auto ok = make_containment(st); !ok)
    log::logger()->warn("{} port {} is not forwarded: {}", log::tag{st.p.id},
                        st.p.lease ? st.p.lease->port() : 0,
                        ok.error().message);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (auto i = st.children.find(msg.source); i != st.children.end())
      forget_child(st, i);
    st.finished.erase(msg.source);
  });
  return {
    [self](execute_atom, std::string& cmd, exec_options& opts,
           chunk_sink& sink) -> caf::result<exec_result> {
      auto& st = self->state;
      if (st.stopped)
        return session_stopped(st);
      auto id = st.p.rt->next_id();
      auto s = start(self, prepare(st, cmd, opts, id), opts, std::move(sink),
                     id, std::nullopt);
      if (!s)
        return to_caf(s.error());
      return run_execution(self, s->exec);
    },
    [self](code_atom, std::string& code, std::string& language,
           exec_options& opts, chunk_sink& sink) -> caf::result<exec_result> {
      auto& st = self->state;
      if (st.stopped)
        return session_stopped(st);
      if (auto ok = validate_language(language); !ok)
        return to_caf(ok.error());
      auto id = st.p.rt->next_id();
      auto spec = prepare(st, code_runner(), opts, id);
      if (spec)
        spec->argv.push_back(language);
      auto s = start(self, std::move(spec), opts, std::move(sink), id,
                     std::move(code));
      if (!s)
        return to_caf(s.error());
      return run_execution(self, s->exec);
    },
    [self](spawn_atom, std::string& cmd, exec_options& opts,
           chunk_sink& sink) -> caf::result<process_actor, int32_t> {
      auto& st = self->state;
      if (st.stopped)
        return session_stopped(st);
      auto id = st.p.rt->next_id();
      // A spawned process keeps its stdin open for `stdin` and `close`.
      auto s = start(self, prepare(st, cmd, opts, id), opts, std::move(sink),
                     id, std::nullopt, true);
      if (!s)
        return to_caf(s.error());
      process_actor handle = s->handle;
      return {handle, static_cast<int32_t>(s->pid)};
    },
    [self](proc_start_atom, std::string& cmd,
           process_options& opts) -> caf::result<process_info> {
      if (self->state.stopped)
        return session_stopped(self->state);
      return start_process(self, cmd, opts);
    },
    [self](proc_read_atom, const std::string& id, uint64_t from,
           uint32_t wait_ms, uint64_t max) {
      return to_process<process_output>(self, id, proc_read_atom_v, from,
                                        std::min(wait_ms, max_process_wait_ms),
                                        max);
    },
    [self](stdin_atom, const std::string& id, std::string& data) {
      return to_process<ok_atom>(self, id, stdin_atom_v, std::move(data));
    },
    [self](close_atom, const std::string& id) {
      return to_process<ok_atom>(self, id, close_atom_v);
    },
    [self](kill_atom, const std::string& id, int32_t sig) {
      return to_process<ok_atom>(self, id, kill_atom_v, sig);
    },
    [self](resize_atom, const std::string& id, uint16_t rows, uint16_t cols) {
      return to_process<ok_atom>(self, id, resize_atom_v, rows, cols);
    },
    [self](wait_atom, const std::string& id, uint32_t wait_ms) {
      return to_process<process_info>(self, id, wait_atom_v,
                                      std::min(wait_ms, max_process_wait_ms));
    },
    [self](proc_list_atom) -> caf::result<std::vector<process_info>> {
      auto& st = self->state;
      if (st.stopped)
        return session_stopped(st);
      // Each handle answers for itself; the list is in the order of ids.
      auto rp = self->make_response_promise<std::vector<process_info>>();
      if (st.processes.empty()) {
        rp.deliver(std::vector<process_info>{});
        return rp;
      }
      // By number: the answers come in any order, the list goes out in
      // the order the processes started.
      struct gathering {
        std::map<uint64_t, process_info> got;
        size_t left = 0;
      };
      auto g = std::make_shared<gathering>();
      g->left = st.processes.size();
      auto one_done = [rp, g]() mutable {
        if (--g->left > 0)
          return;
        std::vector<process_info> out;
        for (auto& [n, i] : g->got)
          out.push_back(std::move(i));
        rp.deliver(std::move(out));
      };
      for (auto& [n, proc] : st.processes)
        self->request(proc.handle, caf::infinite, info_atom_v)
          .then(
            [g, n = n, one_done](process_info& i) mutable {
              g->got.emplace(n, std::move(i));
              one_done();
            },
            // A handle that went meanwhile is not listed.
            [one_done](caf::error&) mutable { one_done(); });
      return rp;
    },
    [self](exited_atom, uint64_t number) { process_exited(self, number); },
    [self](read_atom, uint64_t number) {
      if (auto i = self->state.processes.find(number);
          i != self->state.processes.end())
        i->second.end_read = true;
    },
    [self](cancel_atom, const std::string& key) -> bool {
      auto& st = self->state;
      if (key.empty())
        return false;
      // At most one running child holds a key (check_cancel_key).
      for (auto& [n, x] : st.executions)
        if (x.cancel_key == key) {
          end_execution(self, n, exit_reason::cancelled);
          return true;
        }
      for (auto& [addr, c] : st.children)
        if (c.cancel_key == key) {
          self->send(c.handle, end_atom_v, exit_reason::cancelled);
          return true;
        }
      return false;
    },
    [self](stop_atom) -> caf::result<stop_receipt> {
      auto& st = self->state;
      if (st.receipt)
        return *st.receipt;
      auto rp = self->make_response_promise<stop_receipt>();
      st.stop_waiters.push_back(rp);
      if (!st.stopped)
        begin_stop(self);
      return rp;
    },
    [self](info_atom) -> session_info {
      auto& st = self->state;
      session_info info;
      info.id = st.p.id;
      info.working_directory = st.p.working_directory;
      info.home_directory = st.p.home_directory;
      info.port = st.p.lease ? st.p.lease->port() : 0;
      info.children
        = static_cast<uint32_t>(st.children.size() + st.executions.size());
      info.stopped = st.stopped;
      info.containment = st.p.rt->containment();
      info.isolation = st.p.isolation;
      return info;
    },
    [self](files_atom) -> caf::result<filesystem_actor> {
      auto& st = self->state;
      if (st.stopped)
        return session_stopped(st);
      // Spawned on first use: an idle session costs no worker.
      if (!st.files) {
        auto view = contained_view(st);
        if (!view)
          return to_caf(view.error());
        st.files = spawn_filesystem(self->system(), st.p.rt,
                                    st.p.working_directory, std::move(*view),
                                    self->address());
        self->link_to(st.files);
      }
      return st.files;
    },
    [self](violations_atom) -> std::vector<violation> {
      auto& v = self->state.violations;
      return {v.begin(), v.end()};
    },
    [self](violations_atom, std::vector<violation>& seen) {
      sort_violations(self, std::move(seen));
    },
    [self](output_atom, uint64_t exec, int32_t stream, std::string& data) {
      execution_output(self, exec, static_cast<stream_kind>(stream),
                       std::move(data));
    },
    [self](exited_atom, uint64_t exec, int32_t status, caf::error& err,
           exec_result& kept) {
      execution_exited(self, exec, status, std::move(err), std::move(kept));
    },
    [self](timeout_atom, uint64_t exec) {
      end_execution(self, exec, exit_reason::timeout);
    },
    [self](ended_atom, uint64_t exec, const stop_receipt&) {
      execution_swept(self, exec);
    },
    [self](ended_atom, const stop_receipt& receipt) {
      // The sweep's receipt, or the same handed back by the removal of the
      // session's own home.
      if (self->state.removing_home)
        self->state.home_removed = true;
      self->state.sweep = receipt;
      maybe_complete_stop(self);
    },
    [self](exited_atom) {
      // A spawned process's actor has its result: its child no longer
      // runs, and the session lets go of it (a stop in progress awaits its
      // result by a request of its own).
      auto& st = self->state;
      auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
      auto i = st.children.find(sender);
      if (i == st.children.end())
        return;
      if (!st.stopped)
        st.finished.insert(sender);
      forget_child(st, i);
    },
  };
}

session_actor spawn_session(caf::actor_system& sys, session_params params) {
  return sys.spawn(session_behavior, std::move(params));
}

} // namespace sandbox::actors
