// The session's executions, which it runs itself (no actor per execution):
// the child's events come as messages with the execution's number, the
// output goes to the sink with credit, the result to the caller
// (process/execution.hpp holds what is shared with a spawned process's
// actor).

#include "session/state.hpp"

namespace sandbox::actors::session_detail {

using execution_map = std::map<uint64_t, session_execution>;

namespace {

/// Execution `exec` of the session, found again when an event about it
/// comes (null once its result went out).
auto finder(self_ptr self, uint64_t exec) {
  return [self, exec]() -> process_execution* {
    auto& xs = self->state.executions;
    auto i = xs.find(exec);
    return i == xs.end() ? nullptr : &i->second;
  };
}

/// Logs `v` and keeps it in the session's list (at most
/// `max_session_violations`, the oldest go first).
void keep_violations(session_state& st, std::vector<violation> v) {
  for (auto& x : v) {
    log::logger()->info("{} violation: {} {}", log::tag{st.p.id, x.execution},
                        to_string(x.kind), x.detail);
    st.violations.push_back(std::move(x));
    if (st.violations.size() > max_session_violations)
      st.violations.erase(st.violations.begin());
  }
}

/// Sends the result of execution `i` once it is ready, and forgets it.
/// The result goes out first: what follows (the exit's settling, the
/// bookkeeping) overlaps the caller's wake-up, and the caller's next
/// request finds this handler done whatever the order.
void maybe_finish(self_ptr self, execution_map::iterator i) {
  auto& st = self->state;
  auto& x = i->second;
  if (!execution_detail::ready(x))
    return;
  auto r = execution_detail::build_result(self, finder(self, i->first), x);
  auto kept = r.violations;
  if (x.failure)
    x.promise.deliver(std::move(x.failure));
  else
    x.promise.deliver(std::move(r));
  if (!x.forced)
    execution_detail::settle_exit(x);
  keep_violations(st, std::move(kept));
  if (st.contained)
    st.contained->forget(x.pid);
  bool awaited = x.awaited;
  // Its child and timer end with it.
  st.executions.erase(i);
  if (awaited) {
    --st.awaiting;
    maybe_complete_stop(self);
  }
}

} // namespace

caf::result<exec_result> run_execution(self_ptr self, uint64_t exec) {
  auto& st = self->state;
  auto& x = st.executions.at(exec);
  x.promise = self->make_response_promise<exec_result>();
  // The violations its child caused before the session had it.
  auto early = std::move(x.p.early_violations);
  for (auto& v : early)
    if (!execution_detail::take_violation(x, v))
      keep_violations(st, {std::move(v)});
  auto& target = *st.self_target;
  x.child->activate(
    execution_detail::execution_events<session_actor_impl>(x, target));
  if (x.p.initial_stdin) {
    x.child->write_stdin(0, std::move(*x.p.initial_stdin));
    x.child->close_stdin();
  }
  execution_detail::start_timer<session_actor_impl>(x, target);
  return x.promise;
}

void execution_output(self_ptr self, uint64_t exec, stream_kind s,
                      std::string data) {
  auto& xs = self->state.executions;
  if (auto i = xs.find(exec); i != xs.end())
    execution_detail::on_output(self, finder(self, exec), i->second, s,
                                std::move(data));
}

void execution_exited(self_ptr self, uint64_t exec, int32_t status,
                      caf::error err, exec_result kept) {
  auto& xs = self->state.executions;
  auto i = xs.find(exec);
  if (i == xs.end())
    return;
  auto& x = i->second;
  if (!execution_detail::record_exit(x, status, std::move(err),
                                     std::move(kept)))
    return;
  // One that must wait for its sweep settles now; else after its result.
  if (x.forced)
    execution_detail::settle_exit(x);
  maybe_finish(self, i);
}

void end_execution(self_ptr self, uint64_t exec, exit_reason why) {
  auto& st = self->state;
  // A late timer of an ended execution ends nothing.
  if (auto i = st.executions.find(exec); i != st.executions.end())
    execution_detail::end_execution<session_actor_impl>(i->second,
                                                        *st.self_target, why);
}

void execution_swept(self_ptr self, uint64_t exec) {
  auto& xs = self->state.executions;
  auto i = xs.find(exec);
  if (i == xs.end())
    return;
  i->second.swept = true;
  maybe_finish(self, i);
}

void sort_violations(self_ptr self, std::vector<violation> v) {
  auto& st = self->state;
  std::vector<violation> rest;
  for (auto& x : v) {
    auto i = st.executions.find(x.execution);
    if (i == st.executions.end()
        || !execution_detail::take_violation(i->second, x))
      rest.push_back(std::move(x));
  }
  keep_violations(st, std::move(rest));
}

} // namespace sandbox::actors::session_detail
