#pragma once

// One execution as its owner holds it, and what happens to it. An owner is
// the actor that runs the execution: the session runs its executions itself
// (session/executions.cpp), a spawned process's actor runs its one child
// (process.cpp). The child's reactor callbacks never touch the execution:
// its events become messages to the owner, each with the execution's
// number (`output`, `exited`; a timeout's `timeout`, a stop's `ended`), and
// the owner finds the execution again by that number. Output moves to the
// sink with credit: the sink's ack of a chunk lets the child's stream be
// read again.

#include "events.hpp"
#include "process/process.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "sandbox/log.hpp"
#include "sandbox/output/capped_output.hpp"
#include "sandbox/output/utf8_splitter.hpp"
#include "sandbox/process/child_process.hpp"
#include "sandbox/process/terminator.hpp"
#include "weak_send.hpp"

namespace sandbox::actors {

/// A timer on the reactor with the strand that serializes its use.
struct process_deadline {
  boost::asio::strand<boost::asio::io_context::executor_type> strand;
  boost::asio::steady_timer timer;

  explicit process_deadline(boost::asio::io_context::executor_type ex)
    : strand(boost::asio::make_strand(ex)), timer(strand) {
  }

  /// Cancels the timer (from any thread); the last reference goes with it.
  static void cancel(std::shared_ptr<process_deadline> d) {
    if (!d)
      return;
    auto& strand = d->strand;
    boost::asio::post(strand, [d = std::move(d)] { d->timer.cancel(); });
  }
};

/// What an owner holds of one execution until its result went out.
struct process_execution {
  process_params p;
  std::shared_ptr<child_process> child;
  utf8_splitter split[2];
  /// Output kept here (streamed or spawned executions); null when the
  /// reactor keeps it (`from_reactor`).
  std::unique_ptr<capped_output> kept[2];
  /// What the reactor kept of an execution nobody streams, with its exit.
  std::optional<exec_result> from_reactor;
  /// The child was reaped and both its streams ended (one report).
  bool exited = false;
  int status = 0;
  /// The exit status could not be collected: the result is this error.
  caf::error failure;
  /// Set when the execution is ended from outside (timeout, cancel, stop).
  std::optional<exit_reason> forced;
  /// The staged termination after a timeout or cancel has finished: no
  /// descendant is left when the result goes out.
  bool swept = false;
  /// The session was stopped: stdin and kill answer `session_stopped`.
  bool session_stopped = false;
  /// Violations reported while the child runs (at most
  /// `max_violations_per_result`; the rest are counted).
  std::vector<violation> seen;
  uint64_t seen_dropped = 0;
  /// The execution's timeout on the reactor. Not a delayed message: the
  /// clock would hold the owner until the deadline, long after the result.
  std::shared_ptr<process_deadline> timer;
  /// Output for a remote sink that waits while `in_flight` chunks are
  /// unacknowledged; consecutive pieces of one stream are joined.
  std::deque<output_chunk> queued;
  size_t queued_bytes = 0;
  int in_flight = 0;
  /// Reader credits (per stream) held back while `queued` is full.
  int held[2] = {0, 0};

  process_execution() = default;
  // Owners keep it in place: a move would hand its child over unreleased.
  process_execution(const process_execution&) = delete;
  process_execution& operator=(const process_execution&) = delete;

  /// Whatever ends the execution's owner, or the execution, ends its child
  /// and its timer.
  ~process_execution() {
    release();
  }

  /// Ends the child (the reactor lets go of it) and the timer.
  void release() {
    if (child) {
      child->shutdown();
      child.reset();
    }
    process_deadline::cancel(std::move(timer));
  }
};

namespace execution_detail {

/// Where a stream's per-stream state is kept (`kept`, `split`, `held`).
inline int index_of(stream_kind s) {
  return s == stream_kind::out ? 0 : 1;
}

/// Lets the child's stream `index` be read again.
inline void grant(process_execution& ex, int index) {
  if (ex.child)
    ex.child->grant(index == 0 ? stream_kind::out : stream_kind::err);
}

// A remote sink gets at most `remote_in_flight` chunks unacknowledged;
// output arriving meanwhile is joined into chunks of up to `max_joined`
// bytes, so that a round trip over the network carries more than one pipe
// read. Reading pauses once `max_joined` bytes wait: an execution holds at
// most about (remote_in_flight + 1) x max_joined bytes of output for its
// sink (3 MiB), and a slow reader still slows the child. A sink in this
// process gets every piece as it comes (the reader's credit is its ack).
constexpr int remote_in_flight = 2;
constexpr size_t max_joined = size_t{1} << 20;

/// Grants the reads held back while too much output waited.
inline void release_held(process_execution& ex) {
  for (int i : {0, 1})
    for (; ex.held[i] > 0 && ex.queued_bytes < max_joined; --ex.held[i])
      grant(ex, i);
}

/// Takes on `p`: the output is kept here when it streams (or the process
/// was spawned), else by the reactor.
inline void take_params(process_execution& ex, process_params p) {
  ex.p = std::move(p);
  ex.child = std::move(ex.p.child);
  if (ex.p.sink || ex.p.spawned) {
    ex.kept[0] = std::make_unique<capped_output>(ex.p.output_cap);
    ex.kept[1] = std::make_unique<capped_output>(ex.p.output_cap);
  }
}

/// Sends queued chunks while fewer than `remote_in_flight` are unacked
/// (all of them when `all`: the result is about to go out). `find` finds
/// the execution again when an ack comes (null: it ended meanwhile).
template <class Self, class Find>
void send_queued(Self self, Find find, process_execution& ex,
                 bool all = false) {
  while (ex.p.sink && !ex.queued.empty()
         && (all || ex.in_flight < remote_in_flight)) {
    auto chunk = std::move(ex.queued.front());
    ex.queued.pop_front();
    ex.queued_bytes -= chunk.data.size();
    ++ex.in_flight;
    self->request(ex.p.sink, caf::infinite, chunk_atom_v, std::move(chunk))
      .then(
        [self, find](ack_atom) {
          if (auto* x = find()) {
            --x->in_flight;
            send_queued(self, find, *x);
            release_held(*x);
          }
        },
        [find](caf::error&) {
          // A sink that went away stops streaming, not the execution.
          if (auto* x = find()) {
            x->p.sink = nullptr;
            x->queued.clear();
            x->queued_bytes = 0;
            release_held(*x);
          }
        });
  }
}

/// Gives a chunk of stream `s` to the sink (see `send_queued`).
template <class Self, class Find>
void send_chunk(Self self, Find find, process_execution& ex, stream_kind s,
                std::string data) {
  auto index = index_of(s);
  ex.kept[index]->append(data);
  if (!ex.p.sink) {
    grant(ex, index);
    return;
  }
  if (ex.p.sink.node() != self->node()) {
    auto n = data.size();
    if (!ex.queued.empty() && ex.queued.back().stream == s
        && ex.queued.back().data.size() + n <= max_joined)
      ex.queued.back().data += data;
    else
      ex.queued.push_back(output_chunk{s, std::move(data)});
    ex.queued_bytes += n;
    send_queued(self, find, ex);
    ++ex.held[index];
    release_held(ex);
    return;
  }
  // The sink's ack is the credit for the next read of this stream.
  self
    ->request(ex.p.sink, caf::infinite, chunk_atom_v,
              output_chunk{s, std::move(data)})
    .then(
      [find, index](ack_atom) {
        if (auto* x = find())
          grant(*x, index);
      },
      [find, index](caf::error&) {
        // A sink that went away stops streaming, not the execution.
        if (auto* x = find()) {
          x->p.sink = nullptr;
          grant(*x, index);
        }
      });
}

/// A read of a streamed (or spawned) execution: goes to the sink.
template <class Self, class Find>
void on_output(Self self, Find find, process_execution& ex, stream_kind s,
               std::string data) {
  if (!ex.child || !ex.kept[0])
    return;
  // A read of up to 1 MiB goes on as it is: cut, not copied.
  ex.split[index_of(s)].feed_in_place(data);
  if (data.empty()) {
    grant(ex, index_of(s));
    return;
  }
  send_chunk(self, find, ex, s, std::move(data));
}

/// The child's events as messages to `owner` (a `Handle`), each with the
/// execution's number: every read when the output streams (else the
/// reactor keeps the output and sends it with the exit), and one report at
/// the end, once the child was reaped and both streams ended (the reactor
/// arms the linger at the exit). The reactor holds these callbacks until
/// the child's `shutdown` runs on its strand, which may be after the owner
/// (and even its actor system) is gone: they hold it weakly and reach it
/// through the gate, so its last reference is never dropped on a reactor
/// thread.
template <class Handle>
child_events
execution_events(const process_execution& ex, const weak_target& owner) {
  auto exec = ex.p.exec;
  // The owner takes its turn on the reactor's thread.
  bool now = ex.p.rt->actor_turns();
  child_events ev;
  if (ex.kept[0])
    ev.on_output = [owner, exec, now](stream_kind s, std::string data) {
      send_now_if_alive<Handle>(now, owner, output_atom_v, exec,
                                static_cast<int32_t>(s), std::move(data));
    };
  ev.keep_cap = ex.p.output_cap;
  ev.linger = ex.p.rt->config().linger;
  ev.on_finished = [owner, exec, now](result<int> status, kept_output kept) {
    exec_result r;
    r.stdout_data = std::move(kept.out);
    r.stderr_data = std::move(kept.err);
    r.truncated = kept.truncated;
    r.dropped_bytes = kept.dropped_bytes;
    if (status)
      send_now_if_alive<Handle>(now, owner, exited_atom_v, exec,
                                static_cast<int32_t>(*status), caf::error{},
                                std::move(r));
    else
      send_now_if_alive<Handle>(now, owner, exited_atom_v, exec, int32_t{0},
                                caf::make_error(status.error().code,
                                                status.error().message),
                                std::move(r));
  };
  return ev;
}

/// Starts the execution's timeout, if it has one: `timeout` to `owner`.
template <class Handle>
void start_timer(process_execution& ex, const weak_target& owner) {
  if (ex.p.timeout.count() <= 0)
    return;
  ex.timer = std::make_shared<process_deadline>(ex.p.rt->reactor().executor());
  auto& d = *ex.timer;
  boost::asio::post(d.strand, [t = ex.timer, timeout = ex.p.timeout, owner,
                               exec = ex.p.exec] {
    t->timer.expires_after(timeout);
    t->timer.async_wait([owner, exec](boost::system::error_code ec) {
      if (!ec)
        send_if_alive<Handle>(owner, timeout_atom_v, exec);
    });
  });
}

/// Ends the execution from outside with `why`: a timeout or a cancel
/// terminates the child's tree here (`ended` to `owner` once swept); a
/// session stop only marks it, since the session's sweep ends every
/// process of its own.
template <class Handle>
void end_execution(process_execution& ex, const weak_target& owner,
                   exit_reason why) {
  if (ex.forced || !ex.child)
    return;
  ex.forced = why;
  if (why == exit_reason::stopped) {
    ex.session_stopped = true;
    return;
  }
  auto pid = ex.child->pid();
  auto q = executions_query({pid}, {}, ex.p.marker_prefix);
  // Once exited (and not forced, or this stop would not run), the cgroup
  // went back empty (`settle_exit`): the next execution may be in it now.
  if (!ex.exited)
    q.cgroup = ex.child->cgroup();
  q.log_tag = fmt::format("{}", log::tag{ex.p.session_id, ex.p.exec});
  log::logger()->debug("{} {}: stopping pid {} and its descendants", q.log_tag,
                       to_string(why), pid);
  async_terminate(ex.p.rt->reactor(), ex.p.rt->reaper(), std::move(q), {pid},
                  ex.p.rt->config().stop,
                  [owner, exec = ex.p.exec](stop_receipt receipt) {
                    send_if_alive<Handle>(owner, ended_atom_v, exec, receipt);
                  });
}

/// The child was reaped (by its `child_process`, which also released it
/// from the reaper's registry of owned children) and both its streams
/// ended, or were closed after the linger: its status (or the error that
/// it could not be collected) and, for an execution nobody streams, its
/// output. Once per child: false, and nothing recorded, for a report that
/// comes again or after the child was let go.
bool record_exit(process_execution& ex, int32_t status, caf::error err,
                 exec_result kept);

/// What follows a child's exit, which its result need not wait for: a
/// descendant left in its group is looked for, its cgroup goes back to
/// the session's pool.
void settle_exit(process_execution& ex);

/// Whether the result can go out: the child exited, and a timeout's or a
/// cancel's sweep (if any) is done.
inline bool ready(const process_execution& ex) {
  return ex.exited
         && !(ex.forced && *ex.forced != exit_reason::stopped && !ex.swept);
}

/// Keeps `v` for the result when it is a violation of this running
/// execution (at most `max_violations_per_result`, the rest counted);
/// false when it is not.
inline bool take_violation(process_execution& ex, violation& v) {
  if (!ex.child || v.execution != ex.p.exec)
    return false;
  if (ex.seen.size() < max_violations_per_result)
    ex.seen.push_back(std::move(v));
  else
    ++ex.seen_dropped;
  return true;
}

/// Status → exit code and reason (§1, §5, §6).
void evaluate(const process_execution& ex, exec_result& r);

/// The limits the execution hit (contained sessions).
void judge_limits(const process_execution& ex, exec_result& r);

/// The result of an execution that is `ready`: the rest of its output goes
/// to the sink first (every chunk before the result).
template <class Self, class Find>
exec_result build_result(Self self, Find find, process_execution& ex) {
  for (auto s : {stream_kind::out, stream_kind::err}) {
    if (!ex.kept[0])
      break;
    auto rest = ex.split[index_of(s)].flush();
    if (!rest.empty())
      send_chunk(self, find, ex, s, std::move(rest));
  }
  send_queued(self, find, ex, true);
  exec_result r;
  // What the reactor kept came with the exit, already in a result.
  if (ex.from_reactor) {
    r = std::move(*ex.from_reactor);
  } else if (ex.kept[0]) {
    auto k = kept_output::take(*ex.kept[0], *ex.kept[1]);
    r.stdout_data = std::move(k.out);
    r.stderr_data = std::move(k.err);
    r.truncated = k.truncated;
    r.dropped_bytes = k.dropped_bytes;
  }
  evaluate(ex, r);
  r.violations = std::move(ex.seen);
  r.violations_dropped = ex.seen_dropped;
  judge_limits(ex, r);
  log::logger()->debug("{} ended: {} {}", log::tag{ex.p.session_id, ex.p.exec},
                       to_string(r.reason), r.exit_code);
  return r;
}

} // namespace execution_detail

} // namespace sandbox::actors
