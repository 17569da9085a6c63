#pragma once

// The runtime a node shares with its sessions (private: the public API has
// it as the opaque `runtime_ptr` of runtime_config.hpp).

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "sandbox/actors/runtime_config.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/contain/isolation.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"
#include "sandbox/io/reactor.hpp"
#include "sandbox/process/reaper.hpp"
#include "sandbox/process/terminator.hpp"
#include "sandbox/process/watchdog.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {
class read_guard;
} // namespace sandbox

namespace boost::asio {
class thread_pool;
} // namespace boost::asio

namespace sandbox::actors {

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

  /// Whether an event of a reactor or file thread runs its actor's turn on
  /// that thread (`send_now_if_alive`): not when a test drives the reactor
  /// (`reactor_threads` 0), whose coordinator must see every message.
  bool actor_turns() const noexcept {
    return cfg_.reactor_threads > 0;
  }

  sandbox::reactor& reactor() noexcept {
    return *reactor_;
  }

  const std::shared_ptr<sandbox::reaper>& reaper() noexcept {
    return reaper_;
  }

  /// An open `/dev/null` the children's stdin is made from
  /// (`launch_spec::dev_null`), one for the node's life instead of one per
  /// launch; -1 when it could not be opened (each launch then opens its
  /// own, and names the failure).
  int dev_null() const noexcept {
    return dev_null_.get();
  }

  /// The descriptors the sessions may hold for their execution cgroups
  /// (`held_cgroup`), all together.
  const std::shared_ptr<sandbox::held_cgroup_budget>&
  held_cgroups() const noexcept {
    return held_cgroups_;
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

  /// Reserves `bytes` of the output all long-lived processes may keep
  /// together (`runtime_config::process_retain_total`); false, reserving
  /// nothing, when that would pass it. Thread-safe.
  bool reserve_process_output(uint64_t bytes) noexcept {
    auto now = process_retained_.load();
    do {
      if (bytes > cfg_.process_retain_total
          || now > cfg_.process_retain_total - bytes)
        return false;
    } while (!process_retained_.compare_exchange_weak(now, now + bytes));
    return true;
  }

  /// Gives back what `reserve_process_output` reserved.
  void release_process_output(uint64_t bytes) noexcept {
    process_retained_ -= bytes;
  }

  /// What the node's processes have reserved.
  uint64_t process_output_reserved() const noexcept {
    return process_retained_.load();
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
  unique_fd dev_null_;
  std::shared_ptr<sandbox::held_cgroup_budget> held_cgroups_
    = std::make_shared<sandbox::held_cgroup_budget>(
      sandbox::held_cgroup_budget::default_size());
  std::unique_ptr<boost::asio::thread_pool> files_;
  std::shared_ptr<actor_gate> gate_ = std::make_shared<actor_gate>();
  std::atomic<uint64_t> ids_{0};
  std::atomic<uint64_t> process_retained_{0};
  std::mutex read_guard_mtx_;
  std::shared_ptr<sandbox::read_guard> read_guard_;
  bool read_guard_tried_ = false;
};

} // namespace sandbox::actors
