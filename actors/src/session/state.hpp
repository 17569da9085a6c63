#pragma once

// The session actor's state and the functions its files share
// (actors/src/session/): launch.cpp starts executions, contain.cpp sets up
// and watches a contained session, stop.cpp ends a session, params.cpp
// turns a session_config into session_params, session.cpp is the
// behaviour.

#include "events.hpp"
#include "sandbox/detail/tsan.hpp"
#include "session/session.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_response_promise.hpp>

#include <fmt/format.h>

#include "caf_error.hpp"
#include "filesystem/filesystem.hpp"
#include "handed_out.hpp"
#include "process/execution.hpp"
#include "process/process.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/contain/containment.hpp"
#include "sandbox/fs/directories.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/fs/session_directories.hpp"
#include "sandbox/fs/view.hpp"
#include "sandbox/log.hpp"
#include "sandbox/process/process_tree.hpp"
#include "sandbox/uuid.hpp"
#include "sandbox/validation.hpp"
#include "weak_send.hpp"

namespace sandbox::actors {

/// The handle of a long-lived process (processes.cpp): its output's sink
/// and log, and the way to its process actor.
using process_handle = caf::typed_actor<
  // Its process actor, once the child runs: pid, stdin open.
  caf::reacts_to<start_atom, process_actor, int32_t, bool>,
  caf::replies_to<chunk_atom, output_chunk>::with<ack_atom>,
  caf::replies_to<proc_read_atom, uint64_t, uint32_t,
                  uint64_t>::with<process_output>,
  caf::replies_to<wait_atom, uint32_t>::with<process_info>,
  // A wait that ran out.
  caf::reacts_to<timeout_atom, uint64_t>,
  caf::replies_to<stdin_atom, std::string>::with<ok_atom>,
  caf::replies_to<close_atom>::with<ok_atom>,
  caf::replies_to<kill_atom, int32_t>::with<ok_atom>,
  caf::replies_to<resize_atom, uint16_t, uint16_t>::with<ok_atom>,
  caf::replies_to<info_atom>::with<process_info>>;

/// A long-lived process as its session holds it: its handle, and what its
/// log reserved of the node's budget (`runtime::reserve_process_output`).
struct session_process {
  process_handle handle;
  uint64_t reserved = 0;
  /// A read or a wait told someone how it ended: beyond
  /// `max_exited_processes`, such processes go before unread ones.
  bool end_read = false;
};

/// A running spawned process of a session, as the session tracks it (until
/// its actor reports the result).
struct session_child {
  process_actor_impl handle;
  pid_t pid = 0;
  std::string cancel_key;
};

/// A running execution of a session, which the session runs itself
/// (process/execution.hpp): its caller's promise of the result.
struct session_execution : process_execution {
  caf::typed_response_promise<exec_result> promise;
  pid_t pid = 0;
  std::string cancel_key;
  /// A stop awaits its result (`session_state::awaiting`).
  bool awaited = false;
};

/// What `start` launched: an execution of the session (by its number), or
/// a spawned process's actor.
struct launched {
  pid_t pid = 0;
  uint64_t exec = 0;
  process_actor_impl handle;
};

/// State of one session actor; owned by the actor alone.
struct session_state {
  static inline const char* name = "sandbox.session";

  session_params p;
  /// `SANDBOX_EXEC=<id>/`: the environment entry of every descendant.
  std::string marker_prefix;
  /// The home exists and passed its checks (the default home is made at the
  /// first execution, so that file operations never need one).
  bool home_ready = false;
  /// The session's layers of every child's environment, flattened at its
  /// first launch (`session_env_block`).
  std::shared_ptr<const std::vector<std::string>> env_block;
  /// Its running executions by number: the session runs them itself, no
  /// actor is made per execution.
  std::map<uint64_t, session_execution> executions;
  /// Spawned processes' actors whose child runs (no result yet), by
  /// address. A finished spawned process's actor goes away once its last
  /// handle is gone.
  std::map<caf::actor_addr, session_child> children;
  /// Spawned processes that finished and still live (handles elsewhere);
  /// weak, forgotten at their down message. Told about the stop, so that
  /// those whose handles went out over the network quit.
  std::set<caf::actor_addr> finished;
  /// Its long-lived processes' handles by number (`p-N`), running and
  /// exited; the exited ones in the order they ended (beyond
  /// `max_exited_processes` the oldest whose end was read go, else the
  /// oldest).
  std::map<uint64_t, session_process> processes;
  std::deque<uint64_t> exited_processes;
  uint64_t next_process = 1;
  /// The filesystem worker; all file operations of the session.
  filesystem_actor_impl files;
  /// Process groups of every child ever started (escapers stay in them).
  std::vector<pid_t> groups;
  bool stopped = false;
  /// Stop bookkeeping: the sweep's receipt and results still awaited.
  std::optional<stop_receipt> sweep;
  /// The removal of an own home (`session_params::own_home`) runs on the
  /// file pool: started, then done (it hands the sweep back).
  bool removing_home = false;
  bool home_removed = false;
  size_t awaiting = 0;
  std::optional<stop_receipt> receipt;
  std::vector<caf::typed_response_promise<stop_receipt>> stop_waiters;
  /// This actor, for reactor callbacks (set when it starts).
  std::optional<weak_target> self_target;
  /// The cgroups of its ended executions, kept for the next ones (the
  /// cgroup mode; made at the first execution, not in idle sessions).
  std::shared_ptr<cgroup_pool> cgroups;
  /// A contained session's containment (made when the session starts, its
  /// namespaces at the first execution or file operation); destroying it
  /// ends the namespaces with everything inside.
  std::unique_ptr<containment> contained;
  /// What its executions and file operations were refused or hit, oldest
  /// first (at most `max_session_violations`). A vector: a deque allocates
  /// its map and a first block (about 600 bytes) in every idle session.
  std::vector<violation> violations;

  session_state() = default;
  session_state(const session_state&) = delete;
  session_state& operator=(const session_state&) = delete;

  /// A session that goes away without a stop (its last handle dropped, its
  /// owner crashed) still ends every process of its own.
  ~session_state() {
    // Whoever waits for the result of an execution gets an answer.
    for (auto& [n, x] : executions)
      if (x.promise.pending())
        x.promise.deliver(caf::make_error(
          errc::session_stopped,
          fmt::format("session {} went away during execution {}", p.id, n)));
    // Its processes' handles go with it (a session that ends normally does
    // not take its linked actors along).
    for (auto& [n, proc] : processes) {
      caf::anon_send_exit(proc.handle, caf::exit_reason::user_shutdown);
      if (p.rt)
        p.rt->release_process_output(proc.reserved);
    }
    if (stopped || !p.rt)
      return;
    if (cgroups)
      cgroups->close();
    std::vector<pid_t> own;
    for (auto& [addr, c] : children)
      own.push_back(c.pid);
    for (auto& [n, x] : executions)
      own.push_back(x.pid);
    auto q = executions_query(own, groups, marker_prefix);
    q.cgroup = p.rt->session_cgroup(p.id);
    async_terminate(p.rt->reactor(), p.rt->reaper(), std::move(q),
                    std::move(own), p.rt->config().stop, nullptr);
  }
};

namespace session_detail {

using self_ptr = session_actor_impl::stateful_pointer<session_state>;

/// `session_stopped`, naming the session.
caf::error session_stopped(const session_state& st);

// -- launch.cpp ---------------------------------------------------------------

/// Validates `opts` and `command` and builds the launch (§2, §3).
result<launch_spec> prepare(session_state& st, const std::string& cmd,
                            const exec_options& opts, uint64_t exec_id);

/// The code runner (§7) with the language as its $0.
const std::string& code_runner();

/// Launches `spec` as execution `exec_id` of the session: its child, and
/// either the execution the session runs (`run_execution` starts it) or,
/// with `keep_stdin`, a spawned process's actor.
result<launched>
start(self_ptr self, result<launch_spec> spec, const exec_options& opts,
      chunk_sink sink, uint64_t exec_id,
      std::optional<std::string> initial_stdin, bool keep_stdin = false);

/// Forgets the spawned process `i` (its actor has its result or is gone).
void forget_child(session_state& st,
                  std::map<caf::actor_addr, session_child>::iterator i);

// -- executions.cpp -----------------------------------------------------------

/// Starts execution `exec` (`start` launched it): activates its child and
/// its timeout; its result goes to the caller of the current request.
caf::result<exec_result> run_execution(self_ptr self, uint64_t exec);

/// A read of execution `exec`'s stream.
void execution_output(self_ptr self, uint64_t exec, stream_kind s,
                      std::string data);

/// Execution `exec`'s child ended (see `execution_detail::record_exit`).
void execution_exited(self_ptr self, uint64_t exec, int32_t status,
                      caf::error err, exec_result kept);

/// Ends execution `exec` with `why` (timeout, cancel, stop).
void end_execution(self_ptr self, uint64_t exec, exit_reason why);

/// The sweep after execution `exec`'s timeout or cancel is done.
void execution_swept(self_ptr self, uint64_t exec);

/// Violations: each to the result of its running execution, else to the
/// session's list.
void sort_violations(self_ptr self, std::vector<violation> v);

/// Makes the session's default home on first use.
result<void> ensure_home(session_state& st);

// -- processes.cpp ------------------------------------------------------------

/// Starts long-lived process `cmd` (docs/processes.md) and its handle.
caf::result<process_info> start_process(self_ptr self, std::string& cmd,
                                        process_options& opts);

/// The handle of process `id` (`p-N`); `invalid_argument` naming it when
/// the session has none, `session_stopped` after a stop.
caf::expected<process_handle> find_process(session_state& st,
                                           const std::string& id);

/// Lets go of process `p`: ends its handle, gives its reservation back.
void drop_process(self_ptr self, const session_process& p);

/// Process `number` has exited: the oldest exited beyond
/// `max_exited_processes` go.
void process_exited(self_ptr self, uint64_t number);

// -- contain.cpp --------------------------------------------------------------

/// A contained session's containment, its leased port forwarded inside
/// (nothing for other sessions).
result<void> make_containment(session_state& st);

/// Where the violations of a running execution go while the actor behind
/// `target` (a `Handle`: the session, or a spawned process's actor) lives.
template <class Handle>
containment::execution_receiver violations_to(weak_target target) {
  // A copy: when the actor is gone, `v` goes to the session's receiver.
  return [target = std::move(target)](violation& v) {
    return send_if_alive<Handle>(target, violations_atom_v,
                                 std::vector<violation>{v});
  };
}

/// The same for spawned process actor `handle`.
containment::execution_receiver violations_to(const process_actor_impl& handle,
                                              runtime& rt);

/// What the filesystem worker of a contained session sees (none for other
/// sessions).
result<std::shared_ptr<const fs::session_view>>
contained_view(session_state& st);

// -- stop.cpp -----------------------------------------------------------------

/// Starts the stop: every child ended, then the sweep.
void begin_stop(self_ptr self);

/// Sends the receipt once the sweep and every awaited result are in.
void maybe_complete_stop(self_ptr self);

} // namespace session_detail

} // namespace sandbox::actors
