#pragma once

// One contained session's containment as one object: its namespaces (the
// init), its cgroup limits, the placeholders over its denied paths, the
// forwarders of its network, and the one path its violations take. The
// session holds one `containment`; destroying it ends the namespaces with
// everything inside. Not installed: for this project's own programs.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sandbox/contain/contained_session.hpp"
#include "sandbox/contain/isolation.hpp"
#include "sandbox/contain/read_guard.hpp"
#include "sandbox/contain/session_net.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/execution.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

struct watch_policy;

namespace detail {
class session_launcher;
} // namespace detail

class reactor;
class tcp_forwarder;
struct launch_spec;

namespace fs {
class session_view;
} // namespace fs

/// What a contained session is made of (`containment::make`).
struct containment_settings {
  /// The session's id: log lines, the names of its cgroup v1 directories.
  std::string session_id;
  /// Absolute, existing when the namespaces are made; writable by commands.
  std::string working_directory;
  std::string home_directory;
  /// More host paths in the view (`containment_spec::allow_read`,
  /// `allow_write`).
  std::vector<std::string> allow_read;
  std::vector<std::string> allow_write;
  /// Paths commands must not read (`containment_spec::deny`).
  std::vector<std::string> deny;
  isolation_limits limits;
  /// `containment_spec::id_base`, `id_count`.
  uint32_t id_base = default_session_id_base;
  uint32_t id_count = 0;
  /// Destinations outside that commands may connect to.
  std::vector<net_destination> allow_net;
  /// The session's cgroup (v2; empty: no cgroup mode) and the node's
  /// directory the controllers are enabled from.
  std::string session_cgroup;
  std::string cgroup_root;
  /// Where the read guard puts its placeholders.
  std::string temp_directory;
  /// The node's read guard, asked when the namespaces are made (null, or
  /// no getter: reads of denied paths are refused but not reported).
  std::function<std::shared_ptr<read_guard>()> guard;
};

/// A contained session's containment (see the top of this file).
///
/// Violations take one path: each goes to the receiver of the execution
/// that caused it while that execution is registered and its receiver
/// takes it, else to the session's receiver. Receivers run on reactor
/// threads.
class containment {
public:
  /// Takes a violation of a running execution; false when its owner is
  /// gone (the violation then goes to the session's receiver).
  using execution_receiver = std::function<bool(violation&)>;
  /// Takes every violation no execution took.
  using session_receiver = std::function<void(violation)>;

  /// The containment of one session; nothing is started yet (`start`).
  static std::unique_ptr<containment>
  make(reactor& r, containment_settings settings, session_receiver session);

  /// Ends the forwarders, then the namespaces (the kernel kills every
  /// process inside), then the placeholders and the limits.
  ~containment();

  containment(const containment&) = delete;
  containment& operator=(const containment&) = delete;

  /// Forwards the host's leased port (`listener` listens on it) to
  /// 127.0.0.1:`port` inside; until the namespaces exist its connections
  /// are reset (nothing can listen inside yet).
  result<void> forward_port(unique_fd listener, uint16_t port);

  /// Makes the namespaces once (later calls do nothing): the init in
  /// `<session cgroup>/init`, the limits on the session's cgroup, the
  /// placeholders over the denied paths, the allowed destinations.
  result<void> start();

  /// The namespaces exist.
  bool started() const noexcept {
    return session_ != nullptr;
  }

  /// Sets what a command needs to enter the session (`launch_spec::contain`,
  /// after `start`).
  void prepare(launch_spec& spec) const;

  /// The limits' counters now (after `start`).
  const std::shared_ptr<session_limits>& limits() const noexcept {
    return limits_;
  }

  /// Where commands and file operations may write: the working directory,
  /// the home, the `allow_write` paths, `/tmp` and `/dev/shm`.
  std::vector<std::string> writable_directories() const;

  /// The paths refused to the session: the configured ones and the
  /// secrets of `/etc` the view hides (docs/security.md), so that a read of
  /// one is reported like any denied path.
  std::vector<std::string> denied_paths() const;

  /// The host directories the view brings back even inside a denied path:
  /// the working directory, the home and the `allow_*` paths.
  std::vector<std::string> kept_directories() const;

  /// A launch under way. Its child may cause violations before its group
  /// is registered: those wait until `attach` (or go to the session when
  /// the last launch under way ends without claiming them).
  class launch {
  public:
    explicit launch(containment& c);
    ~launch();
    launch(const launch&) = delete;
    launch& operator=(const launch&) = delete;

    /// Registers process group `pgid` as execution `exec`, whose own
    /// cgroup is `cgroup` (its path; empty: none), where the watch finds a
    /// process that left the group: `make` gets the violations the group
    /// caused so far and returns the receiver of the later ones (under the
    /// registry's lock, so none slips between).
    void attach(
      pid_t pgid, uint64_t exec, const std::string& cgroup,
      const std::function<execution_receiver(std::vector<violation>)>& make);

  private:
    void close();
    containment& c_;
    bool open_ = true;
  };

  /// Reports what the seccomp filter of execution `exec` sees (`listener`
  /// from its launch) to `receiver`, else to the session.
  void watch(unique_fd listener, uint64_t exec, execution_receiver receiver);

  /// A violation of process group `pgid` (the read guard's reports): to
  /// its execution's receiver, held while a launch is under way, else to
  /// the session. Any thread.
  void report(pid_t pgid, violation v);

  /// Forgets process group `pgid` (its execution ended); every group.
  void forget(pid_t pgid);
  void forget_all();

  /// What file operations of the session see: its mount namespace (made
  /// here when no command made it yet) with the write rules of its
  /// commands and its denied paths refused by name.
  result<std::shared_ptr<const fs::session_view>> view();

  /// Closes every forwarder (their sockets are closed when this returns):
  /// nothing reaches the session's servers, nor leaves it, from now on.
  void stop_network() noexcept;

  /// The init (after `start`): its pid, its pidfd.
  const contained_session* session() const noexcept {
    return session_.get();
  }

private:
  struct registry;

  containment(reactor& r, containment_settings settings,
              session_receiver session);

  result<void> cover_denied(containment_spec& spec);
  result<void> start_network();
  /// Opens the root of the session's devpts (`pts_dir_`), where its
  /// commands' terminals are made.
  void open_devpts();
  /// Starts the session's launcher (`launcher_`) and watches its filter,
  /// where the host watches system calls and the node may enter the
  /// session's PID namespace; else each command installs its own.
  void start_launcher();
  /// What the watch judges a call of execution `exec` by (0: the
  /// session's launcher's filter, whose reports find their execution).
  std::shared_ptr<const watch_policy> policy_of(uint64_t exec) const;

  reactor& reactor_;
  containment_settings settings_;
  std::shared_ptr<registry> registry_;
  std::shared_ptr<tcp_forwarder> inbound_;
  std::vector<std::shared_ptr<tcp_forwarder>> outbound_;
  std::shared_ptr<session_limits> limits_;
  /// What every launch would otherwise make for itself
  /// (`launch_containment::report_pair`, `node_pidfd`); unset where they
  /// could not be made.
  unique_fd report_pair_[2];
  unique_fd node_pidfd_;
  /// `launch_containment::pts_dir`; unset where the view has none.
  unique_fd pts_dir_;
  /// Declared before the init: the init goes first.
  std::unique_ptr<read_guard::cover> cover_;
  std::unique_ptr<contained_session> session_;
  /// Ends before the init (see the destructor).
  std::unique_ptr<detail::session_launcher> launcher_;
};

} // namespace sandbox
