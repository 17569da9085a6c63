#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "sandbox/cgroup.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"
#include "sandbox/isolation.hpp"
#include "sandbox/reactor.hpp"
#include "sandbox/reaper.hpp"
#include "sandbox/terminator.hpp"
#include "sandbox/watchdog.hpp"

namespace sandbox {
class read_guard;
} // namespace sandbox

namespace boost::asio {
class thread_pool;
} // namespace boost::asio

namespace sandbox::actors {

/// How a node holds its sessions' process trees (docs/security.md).
enum class containment_choice : uint8_t {
  /// The cgroup mode where a writable cgroup v2 hierarchy exists, else the
  /// process-group mode.
  automatic,
  /// The cgroup mode or nothing: `validate` refuses the config where it
  /// cannot work.
  cgroup,
  /// The process-group mode, even where cgroups would work (tests of the
  /// fallback; hosts that manage cgroups themselves).
  process_group,
};

/// Settings of a node that every session shares. `validate` says whether a
/// node can work with them; a node started with invalid ones refuses every
/// request with that error.
struct runtime_config {
  /// The shell that runs commands (§1): `<shell> -c <command>`. An absolute
  /// path to an executable file.
  std::string shell = "/bin/sh";
  /// Threads of the shared reactor; at least 1 (a runtime made directly
  /// with 0, never a node's, has a reactor its owner runs: sandbox::reactor).
  /// One by default: a second thread only adds hand-overs between the two
  /// (docs/benchmarks.md, "One reactor thread").
  size_t reactor_threads = 1;
  /// Retained bytes per stream of a result (§9); at least 1.
  uint64_t output_cap = default_output_cap;
  /// SIGTERM, grace, SIGKILL (semantics §24): `first` a signal number, `grace`
  /// and `verify` not negative, `poll` positive.
  stop_plan stop;
  /// How long an execution whose shell has exited waits for a background
  /// descendant to close the output pipes before its result is delivered;
  /// not negative.
  std::chrono::milliseconds linger{100};
  /// Where the default home of sessions lives:
  /// `<temp_directory>/sandbox-<uid>/home`. Empty: `$TMPDIR` as the runtime
  /// is made, or `/tmp` when that is unset or empty.
  std::string temp_directory;
  /// The process is only a node (CLI, serve): it becomes a child subreaper
  /// (orphaned descendants are re-parented to it), installs a SIGCHLD
  /// handler (with SA_RESTART) and reaps every orphan, not only the ones
  /// known to be a session's. Leave it off in a host application: the node
  /// then changes neither its SIGCHLD disposition nor its orphan handling.
  bool reap_all_orphans = false;
  /// Threads that run the file operations of every session of the node
  /// (the filesystem workers hand their blocking I/O to them); 1 to 64.
  size_t file_threads = 2;
  /// How process trees are held; see `containment_choice`.
  containment_choice containment = containment_choice::automatic;
  /// The isolation of sessions whose config does not choose one
  /// (docs/security.md). `contained`: `validate` refuses the config on a
  /// host that cannot give it.
  isolation_mode isolation = isolation_mode::none;
  /// Paths that commands of contained sessions cannot read (they read as
  /// empty), e.g. the node's TLS key; the node's base directory (other
  /// sessions' directories) is always added.
  std::vector<std::string> isolation_deny;
  /// Outside destinations (`HOST:PORT`) that commands of contained sessions
  /// may connect to when their config names none (docs/security.md).
  std::vector<std::string> allow_net;
};

/// Checks every value of `cfg`, including that the shell is an absolute
/// path to an executable regular file, and that a forced cgroup mode can
/// work (a cgroup v2 hierarchy with the node's own cgroup writable).
/// @returns `invalid_argument` naming the first bad value, e.g.
///   `invalid runtime_config.reactor_threads 0: must be at least 1`.
result<void> validate(const runtime_config& cfg);

/// Whether callbacks on the reactor may still reach actors: open while the
/// actor system that hosts the runtime's actors lives. A callback that
/// touches an actor (and may drop its last reference) runs through `run`;
/// the owner of the system calls `close` once every actor has ended and
/// before the system is destroyed, so no actor is reached, or destroyed,
/// on a reactor thread after that.
class actor_gate {
public:
  /// Calls `f()` unless the gate is closed.
  template <class F>
  void run(F&& f) {
    std::shared_lock<std::shared_mutex> guard{mtx_};
    if (open_)
      f();
  }

  /// Closes the gate once the callbacks inside it have returned.
  void close() {
    std::unique_lock<std::shared_mutex> guard{mtx_};
    open_ = false;
  }

private:
  std::shared_mutex mtx_;
  bool open_ = true;
};

/// What a node shares with its sessions and process actors: the reactor
/// that watches every child, the subreaper, the node's environment and
/// settings. Owned jointly (shared_ptr) by the node and every actor that
/// uses it, so it outlives the last child.
class runtime {
public:
  /// Takes `cfg` as it is (the node validates it); an empty
  /// `temp_directory` is resolved here.
  explicit runtime(runtime_config cfg = {});

  ~runtime();

  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  const runtime_config& config() const noexcept {
    return cfg_;
  }

  sandbox::reactor& reactor() noexcept {
    return *reactor_;
  }

  const std::shared_ptr<sandbox::reaper>& reaper() noexcept {
    return reaper_;
  }

  /// The node process environment, the lowest layer of §4.
  const env_map& base_env() const noexcept {
    return base_env_;
  }

  /// The pool that runs the blocking file I/O of every session.
  boost::asio::thread_pool& file_pool() noexcept {
    return *files_;
  }

  /// The gate of reactor callbacks that reach actors.
  const std::shared_ptr<actor_gate>& gate() const noexcept {
    return gate_;
  }

  /// The containment mode in force (the `containment` setting, resolved).
  containment_mode containment() const noexcept {
    return cgroups_ ? containment_mode::cgroup
                    : containment_mode::process_group;
  }

  /// Why the process-group mode is in force (the cgroup mode's error, or
  /// "forced by runtime_config.containment"); empty in the cgroup mode.
  const std::string& containment_detail() const noexcept {
    return containment_detail_;
  }

  /// The node's cgroup directory (`<own>/sandbox-<pid>-<starttime>`); empty
  /// in the process-group mode.
  const std::string& cgroup_root() const noexcept;

  /// The node's cgroup tree (`node_root()`, `process_root()`); null in the
  /// process-group mode. Its directories exist only while an execution
  /// needs them: a watchdog kills `node_root()` if it exists.
  const sandbox::cgroup_tree* cgroups() const noexcept {
    return cgroups_.get();
  }

  /// Whether the watchdog ends the node's cgroups if the process dies: a
  /// child born in one needs no process-group record of its own.
  bool cgroups_watched() const noexcept {
    return cgroups_watched_;
  }

  /// The cgroup of session `id`; empty in the process-group mode.
  std::string session_cgroup(const std::string& id) const;

  /// Creates the cgroup of execution `exec` of session `id` and returns its
  /// directory; empty in the process-group mode. Errors: those of
  /// `cgroup_tree::make_execution`.
  result<std::string> execution_cgroup(const std::string& id,
                                       uint64_t exec) const;

  /// Returns a number unique within this runtime (execution numbers).
  uint64_t next_id() noexcept {
    return ++ids_;
  }

  /// The guard that refuses and reports reads of denied paths in contained
  /// sessions, started at the first call; null where the host cannot give
  /// one (`isolation_support::read_watch`). Thread-safe.
  std::shared_ptr<sandbox::read_guard> read_guard();

private:
  runtime_config cfg_;
  env_map base_env_;
  /// Keeps the process's watchdog running while this runtime lives
  /// (destroyed last).
  std::unique_ptr<sandbox::watchdog::lease> watchdog_;
  /// The cgroup mode's tree; null in the process-group mode. Destroyed
  /// after the reactor: its destructor ends what is left of the sessions.
  std::unique_ptr<sandbox::cgroup_tree> cgroups_;
  bool cgroups_watched_ = false;
  std::string containment_detail_;
  std::unique_ptr<sandbox::reactor> reactor_;
  std::shared_ptr<sandbox::reaper> reaper_;
  std::unique_ptr<boost::asio::thread_pool> files_;
  std::shared_ptr<actor_gate> gate_ = std::make_shared<actor_gate>();
  std::atomic<uint64_t> ids_{0};
  std::mutex read_guard_mtx_;
  std::shared_ptr<sandbox::read_guard> read_guard_;
  bool read_guard_tried_ = false;
};

using runtime_ptr = std::shared_ptr<runtime>;

} // namespace sandbox::actors
