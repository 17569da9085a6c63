#include "process/state.hpp"

#include <caf/default_attachable.hpp>

#include "handed_out.hpp"

namespace sandbox::actors {

using namespace execution_detail;

namespace {

using self_ptr = process_actor_impl::stateful_pointer<process_state>;

/// The actor's execution, while it is execution `exec` (an ack of a chunk
/// finds it again; null once its result went out).
auto finder(self_ptr self) {
  return [self, exec = self->state.p.exec]() -> process_execution* {
    auto& st = self->state;
    return st.p.exec == exec && !st.result ? &st : nullptr;
  };
}

void maybe_finish(self_ptr self) {
  auto& st = self->state;
  if (st.result || !ready(st))
    return;
  auto r = build_result(self, finder(self), st);
  // The session learns first: its list of violations has them, and the
  // process is no longer among its running children.
  if (auto session = caf::actor_cast<session_actor_impl>(st.p.session)) {
    if (!r.violations.empty())
      self->send(session, violations_atom_v, r.violations);
    self->send(session, exited_atom_v);
  }
  // Retained output can be 2 × 16 MiB: it is moved, not copied, where it
  // can be.
  bool delivered = !st.waiters.empty();
  if (st.failure) {
    st.result = exec_result{};
    for (auto& w : st.waiters)
      w.deliver(st.failure);
  } else {
    st.result = std::move(r);
    for (auto& w : st.waiters)
      w.deliver(*st.result);
  }
  st.waiters.clear();
  st.release();
  // It quits once its result went out over the network (see `wait`).
  if (delivered && handed_out(self))
    self->quit();
}

/// Sorts violations: those of the running execution are kept for its
/// result; the rest go to the session, which keeps them.
void sort_violations(self_ptr self, std::vector<violation> v) {
  auto& st = self->state;
  std::vector<violation> done;
  for (auto& x : v)
    if (st.result || !take_violation(st, x))
      done.push_back(std::move(x));
  if (done.empty())
    return;
  if (auto session = caf::actor_cast<session_actor_impl>(st.p.session))
    self->send(session, violations_atom_v, std::move(done));
}

} // namespace

process_actor_impl::behavior_type process_behavior(self_ptr self,
                                                   process_params params) {
  auto& st = self->state;
  take_params(st, std::move(params));
  sort_violations(self, std::move(st.p.early_violations));
  auto weak = weak_self(self, *st.p.rt);
  auto ev = execution_events<process_actor_impl>(st, weak);
  ev.on_stdin_written = [weak](uint64_t id, int err) {
    send_if_alive<process_actor_impl>(weak, written_atom_v, id,
                                      static_cast<int32_t>(err));
  };
  st.child->activate(std::move(ev));
  if (st.p.initial_stdin) {
    st.child->write_stdin(st.next_write++, std::move(*st.p.initial_stdin));
    st.child->close_stdin();
  }
  start_timer<process_actor_impl>(st, weak);
  return {
    [self](stdin_atom, std::string& data) -> caf::result<ok_atom> {
      auto& st = self->state;
      if (st.session_stopped)
        return caf::make_error(errc::session_stopped,
                               "the session of this process was stopped");
      if (!st.child || st.result)
        return caf::make_error(errc::invalid_argument,
                               "the process has exited; stdin is closed");
      auto id = st.next_write++;
      auto rp = self->make_response_promise<ok_atom>();
      st.writes.emplace(id, rp);
      st.child->write_stdin(id, std::move(data));
      return rp;
    },
    [self](close_atom) -> caf::result<ok_atom> {
      if (self->state.child)
        self->state.child->close_stdin();
      return ok_atom_v;
    },
    [self](kill_atom, int32_t sig) -> caf::result<ok_atom> {
      auto& st = self->state;
      if (st.session_stopped)
        return caf::make_error(errc::session_stopped,
                               "the session of this process was stopped");
      // 0 probes; anything above SIGRTMAX is no signal.
      if (sig < 0 || sig > SIGRTMAX)
        return caf::make_error(errc::invalid_argument,
                               "invalid signal number: " + std::to_string(sig));
      if (st.child && !st.exited)
        st.child->signal_tree(sig);
      return ok_atom_v;
    },
    [self](resize_atom, uint16_t rows, uint16_t cols) -> caf::result<ok_atom> {
      auto& st = self->state;
      if (!st.child || !st.child->has_terminal())
        return caf::make_error(errc::invalid_argument,
                               "the process has no terminal to resize");
      st.child->resize(terminal_size{rows, cols});
      return ok_atom_v;
    },
    [self](wait_atom) -> caf::result<exec_result> {
      auto& st = self->state;
      if (st.result) {
        // Its result stays for later `wait`s while local handles exist;
        // one whose handle went out over the network quits once a `wait`
        // had it (CAF's registry would keep it forever).
        if (handed_out(self))
          self->quit();
        if (st.failure)
          return st.failure;
        return *st.result;
      }
      auto rp = self->make_response_promise<exec_result>();
      st.waiters.push_back(rp);
      return rp;
    },
    [self](pid_atom) -> int32_t {
      return self->state.child ? self->state.child->pid() : -1;
    },
    [self](output_atom, uint64_t exec, int32_t stream, std::string& data) {
      auto& st = self->state;
      if (exec == st.p.exec && !st.result)
        on_output(self, finder(self), st, static_cast<stream_kind>(stream),
                  std::move(data));
    },
    [self](violations_atom, std::vector<violation>& v) {
      sort_violations(self, std::move(v));
    },
    [self](exited_atom, uint64_t exec, int32_t status, caf::error& err,
           exec_result& kept) {
      auto& st = self->state;
      if (exec != st.p.exec
          || !record_exit(st, status, std::move(err), std::move(kept)))
        return;
      settle_exit(st);
      maybe_finish(self);
    },
    [self](written_atom, uint64_t id, int32_t err) {
      auto& st = self->state;
      auto i = st.writes.find(id);
      if (i == st.writes.end())
        return;
      if (err == 0)
        i->second.deliver(ok_atom_v);
      else
        i->second.deliver(
          caf::make_error(errc::io_error, std::string{"write to stdin failed: "}
                                            + std::strerror(err)));
      st.writes.erase(i);
    },
    [self](timeout_atom, uint64_t exec) {
      auto& st = self->state;
      if (exec == st.p.exec)
        end_execution<process_actor_impl>(st, weak_self(self, *st.p.rt),
                                          exit_reason::timeout);
    },
    [self](end_atom, exit_reason why) {
      auto& st = self->state;
      // The session stopped after this process finished: one whose handle
      // went out over the network quits now (see `wait`).
      if (st.result && why == exit_reason::stopped && handed_out(self)) {
        self->quit();
        return;
      }
      end_execution<process_actor_impl>(st, weak_self(self, *st.p.rt), why);
    },
    [self](ended_atom, uint64_t exec, const stop_receipt&) {
      if (exec != self->state.p.exec)
        return;
      self->state.swept = true;
      maybe_finish(self);
    },
  };
}

process_actor_impl spawn_process(caf::actor_system& sys,
                                 process_params params) {
  // It may wait for its first message: it starts now.
  return sys.spawn(process_behavior, std::move(params));
}

} // namespace sandbox::actors
