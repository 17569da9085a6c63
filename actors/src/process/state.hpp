#pragma once

// The process actor's state and the functions its files share
// (actors/src/process/): result.cpp turns a child's end into its
// exec_result, output.cpp moves its output to the sink with credit,
// process.cpp is the behaviour.

#include "events.hpp"
#include "process/process.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <deque>
#include <map>
#include <memory>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <caf/actor_system.hpp>
#include <caf/default_attachable.hpp>
#include <caf/send.hpp>
#include <caf/typed_response_promise.hpp>

#include "handed_out.hpp"
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

/// What a process actor holds for one execution; made anew for the next
/// one (an execution's actor serves its session's executions one after
/// another).
struct process_execution {
  process_params p;
  /// An execution was given to the actor (a new one has none yet).
  bool started = false;
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
  /// The exit status could not be collected: every `wait` gets this error
  /// instead of a result.
  caf::error failure;
  /// Set when the execution is ended from outside (timeout, cancel, stop).
  std::optional<exit_reason> forced;
  /// The staged termination after a timeout or cancel has finished: no
  /// descendant is left when the result goes out.
  bool swept = false;
  /// The session was stopped: stdin and kill answer `session_stopped`.
  bool session_stopped = false;
  std::optional<exec_result> result;
  /// Violations reported while the child runs (at most
  /// `max_violations_per_result`; the rest are counted).
  std::vector<violation> seen;
  uint64_t seen_dropped = 0;
  std::vector<caf::typed_response_promise<exec_result>> waiters;
  std::map<uint64_t, caf::typed_response_promise<ok_atom>> writes;
  /// The execution's timeout on the reactor. Not a delayed message: the
  /// clock would hold the actor until the deadline, long after its result.
  std::shared_ptr<process_deadline> timer;
  /// Output for a remote sink that waits while `in_flight` chunks are
  /// unacknowledged; consecutive pieces of one stream are joined.
  std::deque<output_chunk> queued;
  size_t queued_bytes = 0;
  int in_flight = 0;
  /// Reader credits (per stream) held back while `queued` is full.
  int held[2] = {0, 0};
};

/// State of one process actor; owned by the actor alone. The child's
/// reactor callbacks never touch it: they only send messages.
struct process_state : process_execution {
  static inline const char* name = "sandbox.process";

  /// Ids of stdin writes, never reused: a late report of an earlier
  /// execution's write finds no promise.
  uint64_t next_write = 0;
  /// Violations of an execution that came before its `start` (the
  /// session registered the actor for the child's group first).
  std::vector<violation> ahead;

  process_state() = default;
  process_state(const process_state&) = delete;
  process_state& operator=(const process_state&) = delete;

  /// Whatever ends the actor ends its child too (CAF destroys the state
  /// when the actor ends, on its own thread).
  ~process_state() {
    if (child)
      child->shutdown();
    process_deadline::cancel(std::move(timer));
  }

  /// Between two executions: the last one's result went out.
  void next() {
    static_cast<process_execution&>(*this) = process_execution{};
  }
};

namespace process_detail {

using self_ptr = process_actor_impl::stateful_pointer<process_state>;

/// Where a stream's per-stream state is kept (`kept`, `split`, `held`).
inline int index_of(stream_kind s) {
  return s == stream_kind::out ? 0 : 1;
}

// -- result.cpp ---------------------------------------------------------------

/// Moves what was kept of the output into `r`.
void put_output(exec_result& r, kept_output k);

/// Status → exit code and reason (§1, §5, §6).
void evaluate(const process_state& st, exec_result& r);

/// The limits the execution hit (contained sessions).
void judge_limits(const process_state& st, exec_result& r);

// -- output.cpp ---------------------------------------------------------------

/// Lets the child's stream `index` be read again.
void grant(self_ptr self, int index);

/// Grants the reads held back while too much output waited.
void release_held(self_ptr self);

/// Sends queued chunks while the sink's credit lasts (all: the result is
/// about to go out).
void send_queued(self_ptr self, bool all = false);

/// Gives a chunk of stream `s` to the sink.
void send_chunk(self_ptr self, stream_kind s, std::string data);

} // namespace process_detail

} // namespace sandbox::actors
