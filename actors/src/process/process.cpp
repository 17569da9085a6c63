#include "process/state.hpp"

namespace sandbox::actors {

using namespace process_detail;

namespace {

void maybe_finish(self_ptr self) {
  auto& st = self->state;
  if (st.result || !st.exited)
    return;
  if (st.forced && *st.forced != exit_reason::stopped && !st.swept)
    return;
  for (auto s : {stream_kind::out, stream_kind::err}) {
    auto rest = st.split[index_of(s)].flush();
    if (!rest.empty())
      send_chunk(self, s, std::move(rest));
  }
  // Every chunk goes out before the result.
  send_queued(self, true);
  exec_result r;
  // What the reactor kept came with the exit, already in a result.
  if (st.from_reactor)
    r = std::move(*st.from_reactor);
  else
    put_output(r, kept_output::take(*st.kept[0], *st.kept[1]));
  evaluate(st, r);
  r.violations = std::move(st.seen);
  r.violations_dropped = st.seen_dropped;
  judge_limits(st, r);
  log::logger()->debug("{} ended: {} {}", log::tag{st.p.session_id, st.p.exec},
                       to_string(r.reason), r.exit_code);
  // The session learns first: a caller who has seen the result never finds
  // the execution still running there (its cancel key still held).
  auto session = caf::actor_cast<session_actor_impl>(st.p.session);
  if (session) {
    if (!r.violations.empty())
      self->send(session, violations_atom_v, r.violations);
    // That was all the session needs to watch of an execution's actor (it
    // forgets the child at `exited` and keeps the actor for its next
    // execution, or drops it): no `down` when it ends. Removed before
    // `exited` goes out, ahead of the monitor of a next execution. A
    // spawned process's actor stays monitored (the session holds its
    // handle for `wait` until the actor is gone).
    if (!st.p.spawned)
      self->detach(caf::default_attachable::observe_token{
        st.p.session, caf::default_attachable::monitor});
    self->send(session, exited_atom_v);
  }
  // Retained output can be 2 × 16 MiB: it is moved, not copied, where it
  // can be.
  bool delivered = !st.waiters.empty();
  if (st.failure) {
    st.result = exec_result{};
    for (auto& w : st.waiters)
      w.deliver(st.failure);
  } else if (delivered && !st.p.spawned && st.waiters.size() == 1) {
    st.waiters.front().deliver(std::move(r));
    // Later `wait`s (none expected) still learn the exit status.
    st.result = exec_result{};
    st.result->exit_code = r.exit_code;
    st.result->reason = r.reason;
  } else {
    st.result = std::move(r);
    for (auto& w : st.waiters)
      w.deliver(*st.result);
  }
  st.waiters.clear();
  if (st.child) {
    st.child->shutdown();
    st.child.reset();
  }
  process_deadline::cancel(std::move(st.timer));
  // An execution's actor waits for its session's next execution (the
  // session keeps it, or drops it and it goes away; with the session gone
  // there is none); a spawned process's quits once its result went out
  // over the network (see `wait`).
  if (st.p.spawned ? delivered && handed_out(self) : !session || st.p.last)
    self->quit();
}

/// The child was reaped (by its `child_process`, which also released it
/// from the reaper's registry of owned children) and both its streams
/// ended, or were closed after the linger.
void child_exited(self_ptr self) {
  auto& st = self->state;
  st.exited = true;
  if (st.child) {
    // A descendant still in the child's group (`cmd &`) may outlive it:
    // its zombie, once re-parented to the node, is ours to reap. The report
    // came when the streams ended, after a linger maybe: a descendant that
    // died meanwhile is a zombie the reaper's scans skipped so far. The
    // reaper looks for it on the reactor, not on this actor's thread.
    auto pgid = st.child->pid();
    if (::kill(-pgid, 0) == 0)
      st.p.rt->reaper()->collect_group(pgid);
    // Its cgroup serves the session's next execution once empty; not while
    // a timeout's or a cancel's stop may still kill what is in it (that
    // stop removes it), nor after the session's stop (which removes it).
    if (!st.forced)
      st.child->return_cgroup();
  }
  maybe_finish(self);
}

/// Ends the execution from outside with `why`: a timeout or a cancel
/// terminates the child's tree here; a session stop only marks it, since
/// the session's sweep ends every process of its own.
void end_execution(self_ptr self, exit_reason why) {
  auto& st = self->state;
  if (st.forced || st.result || !st.child)
    return;
  st.forced = why;
  if (why == exit_reason::stopped) {
    st.session_stopped = true;
    return;
  }
  auto pid = st.child->pid();
  auto q = executions_query({pid}, {}, st.p.marker_prefix);
  // Once exited (and not forced, or this stop would not run), the cgroup
  // went back empty (`child_exited`): the next execution may be in it now.
  if (!st.exited)
    q.cgroup = st.child->cgroup();
  q.log_tag = fmt::format("{}", log::tag{st.p.session_id, st.p.exec});
  log::logger()->debug("{} {}: stopping pid {} and its descendants", q.log_tag,
                       to_string(why), pid);
  async_terminate(st.p.rt->reactor(), st.p.rt->reaper(), std::move(q), {pid},
                  st.p.rt->config().stop,
                  [weak = weak_self(self, *st.p.rt)](stop_receipt receipt) {
                    send_if_alive<process_actor_impl>(weak, ended_atom_v,
                                                      receipt);
                  });
}

void start_child(self_ptr self) {
  auto& st = self->state;
  // The reactor holds these callbacks until the child's `shutdown` runs on
  // its strand, which may be after the actor (and even its actor system)
  // is gone: they hold the actor weakly and reach it through the gate, so
  // its last reference is never dropped on a reactor thread.
  auto weak = weak_self(self, *st.p.rt);
  child_events ev;
  ev.on_stdin_written = [weak](uint64_t id, int err) {
    send_if_alive<process_actor_impl>(weak, written_atom_v, id,
                                      static_cast<int32_t>(err));
  };
  // One report at the end: the status once the child was reaped and both
  // streams ended (the reactor arms the linger at the exit). Nobody
  // streams this execution: the reactor also keeps its output, sent with
  // the report. Else every read is a message, and the report carries no
  // output.
  if (st.kept[0])
    ev.on_output = [weak](stream_kind s, std::string data) {
      send_if_alive<process_actor_impl>(
        weak, output_atom_v, static_cast<int32_t>(s), std::move(data));
    };
  ev.keep_cap = st.p.output_cap;
  ev.linger = st.p.rt->config().linger;
  ev.on_finished = [weak](result<int> status, kept_output kept) {
    exec_result r;
    put_output(r, std::move(kept));
    if (status)
      send_if_alive<process_actor_impl>(weak, exited_atom_v,
                                        static_cast<int32_t>(*status),
                                        caf::error{}, std::move(r));
    else
      send_if_alive<process_actor_impl>(weak, exited_atom_v, int32_t{0},
                                        caf::make_error(status.error().code,
                                                        status.error().message),
                                        std::move(r));
  };
  st.child = std::move(st.p.child);
  st.child->activate(std::move(ev));
}

/// Feeds the initial stdin and starts the timeout.
void start_inputs(self_ptr self) {
  auto& st = self->state;
  if (st.p.initial_stdin) {
    st.child->write_stdin(st.next_write++, std::move(*st.p.initial_stdin));
    st.child->close_stdin();
  }
  if (st.p.timeout.count() > 0) {
    st.timer
      = std::make_shared<process_deadline>(st.p.rt->reactor().executor());
    auto& d = *st.timer;
    boost::asio::post(d.strand, [t = st.timer, timeout = st.p.timeout,
                                 weak = weak_self(self, *st.p.rt),
                                 exec = st.p.exec] {
      t->timer.expires_after(timeout);
      t->timer.async_wait([weak, exec](boost::system::error_code ec) {
        if (!ec)
          send_if_alive<process_actor_impl>(weak, timeout_atom_v, exec);
      });
    });
  }
}

/// Sorts violations: those of the running execution are kept for its
/// result (up to `max_violations_per_result`, the rest counted); those of
/// a later one wait for its `start` (a spawned process's actor has no
/// later one); the rest (an execution whose result went out) go to the
/// session, which keeps them.
void sort_violations(self_ptr self, std::vector<violation> v) {
  auto& st = self->state;
  std::vector<violation> done;
  for (auto& x : v) {
    if (st.started && !st.result && x.execution == st.p.exec) {
      if (st.seen.size() < max_violations_per_result)
        st.seen.push_back(std::move(x));
      else
        ++st.seen_dropped;
    } else if ((!st.started || x.execution > st.p.exec) && !st.p.spawned
               && st.ahead.size() < max_violations_per_result) {
      st.ahead.push_back(std::move(x));
    } else {
      done.push_back(std::move(x));
    }
  }
  if (done.empty())
    return;
  if (auto session = caf::actor_cast<session_actor_impl>(st.p.session))
    self->send(session, violations_atom_v, std::move(done));
}

/// Takes on the execution of `params`: activates its child.
void begin(self_ptr self, process_params params) {
  auto& st = self->state;
  st.next();
  st.p = std::move(params);
  st.started = true;
  auto early = std::move(st.p.early_violations);
  early.insert(early.end(), std::make_move_iterator(st.ahead.begin()),
               std::make_move_iterator(st.ahead.end()));
  st.ahead.clear();
  sort_violations(self, std::move(early));
  if (st.p.sink || st.p.spawned) {
    st.kept[0] = std::make_unique<capped_output>(st.p.output_cap);
    st.kept[1] = std::make_unique<capped_output>(st.p.output_cap);
  }
  start_child(self);
  start_inputs(self);
}

} // namespace

process_actor_impl::behavior_type
process_behavior(self_ptr self, std::optional<process_params> params) {
  if (params)
    begin(self, std::move(*params));
  return {
    [self](start_atom, process_start& next) -> caf::result<exec_result> {
      auto& st = self->state;
      if (!next.params || (st.started && !st.result) || st.p.spawned)
        return caf::make_error(errc::invalid_argument,
                               "the process actor runs an execution already");
      begin(self, std::move(*next.params));
      auto rp = self->make_response_promise<exec_result>();
      st.waiters.push_back(rp);
      return rp;
    },
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
      if (!st.started)
        return caf::make_error(errc::invalid_argument,
                               "the process actor has no execution");
      if (st.result) {
        // A spawned process's result stays for later `wait`s while local
        // handles exist; one whose handle went out over the network quits
        // once a `wait` had it (CAF's registry would keep it forever).
        if (st.p.spawned && handed_out(self))
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
    [self](output_atom, int32_t stream, std::string& data) {
      if (!self->state.child || !self->state.kept[0])
        return;
      auto s = static_cast<stream_kind>(stream);
      // A read of up to 1 MiB goes on as it is: cut, not copied.
      self->state.split[index_of(s)].feed_in_place(data);
      if (data.empty()) {
        if (self->state.child)
          self->state.child->grant(s);
        return;
      }
      send_chunk(self, s, std::move(data));
    },
    [self](violations_atom, std::vector<violation>& v) {
      sort_violations(self, std::move(v));
    },
    [self](exited_atom, int32_t status, caf::error& err, exec_result& kept) {
      auto& st = self->state;
      // Once per child; none of an earlier execution comes this late.
      if (!st.child || st.exited)
        return;
      if (err)
        st.failure = std::move(err);
      else
        st.status = status;
      if (!st.kept[0])
        st.from_reactor = std::move(kept);
      child_exited(self);
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
      // A late timer of an earlier execution ends nothing.
      if (exec == self->state.p.exec)
        end_execution(self, exit_reason::timeout);
    },
    [self](end_atom, exit_reason why) {
      auto& st = self->state;
      // The session stopped after this spawned process finished: one whose
      // handle went out over the network quits now (see `wait`).
      if (st.result && st.p.spawned && why == exit_reason::stopped
          && handed_out(self)) {
        self->quit();
        return;
      }
      end_execution(self, why);
    },
    [self](ended_atom, const stop_receipt&) {
      self->state.swept = true;
      maybe_finish(self);
    },
  };
}

process_actor_impl spawn_process(caf::actor_system& sys) {
  // It gets its first execution at once (the session delegates the
  // caller's request to it as `start`): it starts with that message,
  // scheduled once.
  return sys.spawn<caf::lazy_init>(process_behavior,
                                   std::optional<process_params>{});
}

process_actor_impl spawn_process(caf::actor_system& sys,
                                 process_params params) {
  // A spawned process's actor may wait for its first message: it starts
  // now.
  return sys.spawn(process_behavior,
                   std::optional<process_params>{std::move(params)});
}

} // namespace sandbox::actors
