#include "sandbox/actors/session.hpp"
#include "sandbox/detail/tsan.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_response_promise.hpp>

#include <fmt/format.h>

#include "caf_error.hpp"
#include "handed_out.hpp"
#include "sandbox/actors/filesystem.hpp"
#include "sandbox/actors/process.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/fs/directories.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/fs/view.hpp"
#include "sandbox/isolation.hpp"
#include "sandbox/log.hpp"
#include "sandbox/process_tree.hpp"
#include "sandbox/read_guard.hpp"
#include "sandbox/session_directories.hpp"
#include "sandbox/session_net.hpp"
#include "sandbox/syscall_watch.hpp"
#include "sandbox/tcp_forwarder.hpp"
#include "sandbox/uuid.hpp"
#include "sandbox/validation.hpp"
#include "weak_send.hpp"

namespace sandbox::actors {

/// One running child of a session, as the session tracks it (until its
/// process actor reports the result).
struct session_child {
  process_actor_impl handle;
  pid_t pid = 0;
  std::string cancel_key;
  /// Started by `spawn`: its actor may outlive the result (see `finished`).
  bool spawned = false;
  /// Its actor serves the next execution (see `process_params::last`).
  bool reusable = false;
};

/// A launched child and, unless spawned, the execution its process actor
/// is to start (the session delegates the caller's request with it).
struct launched {
  session_child child;
  process_start start;
};

/// A contained session's running executions by process group (the
/// leader's pid): the read guard's reports come on a reactor thread and go
/// straight to the execution's process actor while the reader waits.
struct running_groups {
  std::mutex mtx;
  std::map<pid_t, std::pair<uint64_t, weak_target>> by_group;
  /// Launches under way: their children may read before their groups are
  /// registered here.
  int launching = 0;
  /// Reports of unknown groups during a launch, until it registers its
  /// group (its process actor starts with them); the rest go to the session.
  std::map<pid_t, std::vector<violation>> unclaimed;
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
  /// Process actors whose child runs (no result yet), by address. Besides
  /// them only `idle` is held: a finished spawned process's actor goes away
  /// once its last handle is gone.
  std::map<caf::actor_addr, session_child> children;
  /// An execution's actor whose result went out, kept for the next
  /// execution: no actor is made and ended per execution.
  process_actor_impl idle;
  /// Spawned processes that finished and still live (handles elsewhere);
  /// weak, forgotten at their down message. Told about the stop, so that
  /// those whose handles went out over the network quit.
  std::set<caf::actor_addr> finished;
  /// The filesystem worker; all file operations of the session.
  filesystem_actor_impl files;
  /// Process groups of every child ever started (escapers stay in them).
  std::vector<pid_t> groups;
  bool stopped = false;
  /// Stop bookkeeping: the sweep's receipt and results still awaited.
  std::optional<stop_receipt> sweep;
  size_t awaiting = 0;
  std::optional<stop_receipt> receipt;
  std::vector<caf::typed_response_promise<stop_receipt>> stop_waiters;
  /// This actor, for reactor callbacks (set when it starts).
  std::optional<weak_target> self_target;
  std::shared_ptr<running_groups> running = std::make_shared<running_groups>();
  /// The cgroups of its ended executions, kept for the next ones (the
  /// cgroup mode; made at the first execution, not in idle sessions).
  std::shared_ptr<cgroup_pool> cgroups;
  /// The placeholders over a contained session's denied paths (its reads
  /// are reported); they go after the namespaces that mount them.
  std::unique_ptr<read_guard::cover> read_cover;
  /// A contained session's namespaces (made at the first execution);
  /// destroying it kills them with everything inside.
  std::unique_ptr<contained_session> contained;
  /// Its memory and process limits (with the contained session).
  std::shared_ptr<session_limits> cgroup_limits;
  /// What its executions and file operations were refused or hit, oldest
  /// first (at most `max_session_violations`). A vector: a deque allocates
  /// its map and a first block (about 600 bytes) in every idle session.
  std::vector<violation> violations;
  /// A contained session's forwarders: the host's leased port into the
  /// session, and each allowed destination out of it. Stopping one closes
  /// its sockets at once.
  std::shared_ptr<tcp_forwarder> inbound;
  std::vector<std::shared_ptr<tcp_forwarder>> outbound;

  session_state() = default;
  session_state(const session_state&) = delete;
  session_state& operator=(const session_state&) = delete;

  /// A session that goes away without a stop (its last handle dropped, its
  /// owner crashed) still ends every process of its own.
  ~session_state() {
    if (stopped || !p.rt)
      return;
    if (cgroups)
      cgroups->close();
    std::vector<pid_t> own;
    for (auto& [addr, c] : children)
      own.push_back(c.pid);
    auto q = executions_query(own, groups, marker_prefix);
    q.cgroup = p.rt->session_cgroup(p.id);
    async_terminate(p.rt->reactor(), p.rt->reaper(), std::move(q),
                    std::move(own), p.rt->config().stop, nullptr);
  }
};

namespace {

using self_ptr = session_actor_impl::stateful_pointer<session_state>;

caf::error session_stopped(const session_state& st) {
  return stopped_error(fmt::format("session {}", st.p.id));
}

/// The child's environment, lowest layer first (§4): node process env <
/// HOME < session env, built once per session (`launch_spec::env_block`)...
const std::shared_ptr<const std::vector<std::string>>&
session_env_block(session_state& st) {
  if (!st.env_block) {
    env_map env = st.p.rt->base_env();
    env["HOME"] = st.p.home_directory;
    for (auto& [k, v] : st.p.env)
      env[k] = v;
    auto block = std::make_shared<std::vector<std::string>>();
    block->reserve(env.size());
    for (auto& [k, v] : env)
      block->push_back(k + "=" + v);
    st.env_block = std::move(block);
  }
  return st.env_block;
}

/// ... < per-call env, plus the marker entry: what a launch adds to the
/// session's block (`launch_spec::env`).
env_map call_env(const session_state& st, const env_map& call,
                 uint64_t exec_id) {
  env_map env = call;
  env[std::string{marker_variable}] = fmt::format("{}/{}/", st.p.id, exec_id);
  return env;
}

/// Makes the session's default home on first use (§18: private to the
/// user, never reached through a symlink).
result<void> ensure_home(session_state& st) {
  if (st.home_ready)
    return {};
  if (auto ok = make_private_home(st.p.home_directory); !ok)
    return ok.error();
  st.home_ready = true;
  return {};
}

/// Validates `opts` and `command` and builds the launch (§2, §3): nothing
/// is spawned when any input is bad. The working directory itself is
/// checked by the launcher, once, with the errno of what failed.
result<launch_spec> prepare(session_state& st, const std::string& cmd,
                            const exec_options& opts, uint64_t exec_id) {
  if (auto ok = validate_command(cmd); !ok)
    return ok.error();
  if (auto ok = validate_env(opts.env); !ok)
    return ok.error();
  if (opts.timeout.count() < 0 || opts.timeout > max_exec_timeout)
    return error{errc::invalid_argument,
                 fmt::format("invalid exec_options.timeout {} ms: must be 0 "
                             "to {} ms (0 = none)",
                             opts.timeout.count(), max_exec_timeout.count())};
  if (!opts.cwd.empty())
    if (auto ok = fs::validate_path(opts.cwd); !ok)
      return error{errc::invalid_argument,
                   fmt::format("invalid exec_options.cwd: {}",
                               ok.error().message)};
  if (auto ok = ensure_home(st); !ok)
    return ok.error();
  launch_spec spec;
  spec.cwd = opts.cwd.empty() ? st.p.working_directory
                              : fs::resolve(st.p.working_directory, opts.cwd);
  spec.executable = st.p.rt->config().shell;
  spec.argv = {spec.executable, "-c", cmd};
  spec.env_block = session_env_block(st);
  spec.env = call_env(st, opts.env, exec_id);
  return spec;
}

/// The code runner (§7) with the language as its $0, validated before.
const std::string& code_runner() {
  static const std::string script = code_runner_script("$0");
  return script;
}

/// Refuses a cancel key that a running execution of the session holds: a
/// key names one execution, so `cancel` never has to guess.
result<void> check_cancel_key(const session_state& st, const std::string& key) {
  if (key.empty())
    return {};
  for (auto& [addr, c] : st.children)
    if (c.cancel_key == key)
      return error{errc::invalid_argument,
                   fmt::format("cancel_key {} is already used by a running "
                               "execution of this session",
                               quote_for_message(key))};
  return {};
}

/// Closes every forwarder of the session (their sockets are closed when
/// this returns).
void stop_network(session_state& st) {
  if (st.inbound)
    st.inbound->stop();
  st.inbound = nullptr;
  for (auto& f : st.outbound)
    f->stop();
  st.outbound.clear();
}

/// The host's leased port, listened on since the session was made,
/// forwarded to 127.0.0.1:<port> inside: until the init exists, its
/// connections are reset (nothing can listen inside yet).
result<void> start_inbound(session_state& st) {
  if (!st.p.host_listener || !*st.p.host_listener || !st.p.lease)
    return {};
  sockaddr_in dest{};
  dest.sin_family = AF_INET;
  dest.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  dest.sin_port = htons(st.p.lease->port());
  auto f = tcp_forwarder::start(
    st.p.rt->reactor(), std::move(*st.p.host_listener),
    reinterpret_cast<sockaddr*>(&dest), sizeof(dest), nullptr,
    fmt::format("{} port {}", log::tag{st.p.id}, st.p.lease->port()));
  if (!f)
    return f.error();
  st.inbound = std::move(*f);
  return {};
}

/// The network of a new init: the inbound forwarder reaches inside, and
/// each allowed destination gets its address on the session's loopback
/// and a listener there, forwarded to the real destination from the host.
result<void> start_network(session_state& st, contained_session& c) {
  // The forwarders' sockets are made from their own copy of the pidfd.
  auto pidfd
    = std::make_shared<unique_fd>(::fcntl(c.init_pidfd(), F_DUPFD_CLOEXEC, 3));
  if (!*pidfd)
    return make_errno_error(errno, "dup of the session init's pidfd");
  if (st.inbound)
    st.inbound->set_factory([pidfd] {
      return socket_in_namespace(pidfd->get(), AF_INET, SOCK_STREAM);
    });
  for (auto& d : st.p.allow_net) {
    auto what = fmt::format("{}:{} in the session (allowed by {})", d.address,
                            d.port, d.entry);
    if (auto ok = add_local_address(pidfd->get(), d); !ok)
      return ok.error();
    auto inside = socket_in_namespace(pidfd->get(), d.addr.ss_family,
                                      SOCK_STREAM);
    if (!inside)
      return inside.error();
    auto listener = listen_tcp(reinterpret_cast<const sockaddr*>(&d.addr),
                               d.addr_len, what, std::move(*inside));
    if (!listener)
      return listener.error();
    auto family = d.addr.ss_family;
    auto f = tcp_forwarder::start(
      st.p.rt->reactor(), std::move(*listener),
      reinterpret_cast<const sockaddr*>(&d.addr), d.addr_len,
      [family]() -> result<unique_fd> {
        unique_fd fd{::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
        if (!fd)
          return make_errno_error(errno, "socket (to an allowed "
                                         "destination)");
        return fd;
      },
      fmt::format("{} to {}:{}", log::tag{st.p.id}, d.address, d.port));
    if (!f)
      return f.error();
    st.outbound.push_back(std::move(*f));
  }
  return {};
}

result<void> cover_denied(session_state& st, containment_spec& spec);

/// A contained session's namespaces, made once, before its first command:
/// the init lives in `<session cgroup>/init` (only leaves hold processes),
/// the cgroup limits go on the session's cgroup.
result<void> ensure_contained(session_state& st) {
  if (st.p.isolation != isolation_mode::contained || st.contained)
    return {};
  containment_spec spec;
  spec.working_directory = st.p.working_directory;
  spec.home_directory = st.p.home_directory;
  spec.deny = st.p.deny;
  spec.limits = st.p.limits;
  auto session_cgroup = st.p.rt->session_cgroup(st.p.id);
  if (!session_cgroup.empty()) {
    spec.cgroup = session_cgroup + "/init";
    // With its parents: a file operation may come before any execution.
    if (auto ok = fs::make_directories(spec.cgroup, 0755); !ok)
      return error{errc::io_error,
                   fmt::format("cannot make cgroup {}: {}", spec.cgroup,
                               ok.error().message)};
  }
  auto limits = session_limits::make(
    st.p.limits,
    session_cgroup.empty() ? std::string{} : st.p.rt->cgroups()->process_root(),
    session_cgroup, st.p.id);
  if (!limits)
    return limits.error();
  st.cgroup_limits = *limits;
  spec.cgroup_limits = st.cgroup_limits;
  if (auto ok = cover_denied(st, spec); !ok)
    return ok.error();
  auto s = contained_session::start(spec);
  if (!s) {
    st.read_cover.reset();
    return s.error();
  }
  (*s)->reap_on(st.p.rt->reactor());
  if (auto ok = start_network(st, **s); !ok) {
    for (auto& f : st.outbound)
      f->stop();
    st.outbound.clear();
    if (st.inbound)
      st.inbound->set_factory(nullptr);
    s->reset();
    st.read_cover.reset();
    return ok.error();
  }
  st.contained = std::move(*s);
  return {};
}

/// Where a contained session's commands and file operations may write (the
/// Landlock rules of its commands).
std::vector<std::string> writable_directories(const session_state& st) {
  return {st.p.working_directory, st.p.home_directory, "/tmp", "/dev/shm"};
}

weak_target weak_process(const process_actor_impl& handle, runtime& rt) {
  return {
    caf::weak_actor_ptr{caf::actor_cast<caf::strong_actor_ptr>(handle).get()},
    rt.gate()};
}

/// Gives `v` to the execution's process actor while it lives (its result
/// carries it), else to the session. Called on reactor threads.
void report_violation(const weak_target* process, const weak_target& session,
                      violation v);

/// A launch of a contained session whose reads are watched: a report of a
/// group not registered yet may be the new child's, so it waits in
/// `unclaimed` until the launch registers its group (or ends without one).
class launch_window {
public:
  explicit launch_window(session_state& st)
    : st_(st), open_(st.read_cover != nullptr) {
    if (open_) {
      std::lock_guard<std::mutex> guard{st_.running->mtx};
      ++st_.running->launching;
    }
  }

  launch_window(const launch_window&) = delete;
  launch_window& operator=(const launch_window&) = delete;

  ~launch_window() {
    close();
  }

  /// Gives `params` the reports group `pid` had so far and registers the
  /// process actor that `make` returns for later ones, in one step under
  /// the lock.
  template <class Make>
  process_actor_impl attach(pid_t pid, process_params& params, Make make) {
    if (!open_)
      return make();
    process_actor_impl handle;
    auto exec_id = params.exec;
    {
      std::lock_guard<std::mutex> guard{st_.running->mtx};
      auto i = st_.running->unclaimed.find(pid);
      if (i != st_.running->unclaimed.end()) {
        for (auto& v : i->second)
          v.execution = exec_id;
        params.early_violations = std::move(i->second);
        st_.running->unclaimed.erase(i);
      }
      handle = make();
      st_.running->by_group.insert_or_assign(
        pid, std::make_pair(exec_id, weak_process(handle, *st_.p.rt)));
    }
    close();
    return handle;
  }

private:
  /// The last launch to end gives the reports nobody claimed to the session.
  void close() {
    if (!open_)
      return;
    open_ = false;
    std::map<pid_t, std::vector<violation>> rest;
    {
      std::lock_guard<std::mutex> guard{st_.running->mtx};
      if (--st_.running->launching == 0)
        rest.swap(st_.running->unclaimed);
    }
    for (auto& [pgid, vs] : rest)
      for (auto& v : vs)
        report_violation(nullptr, *st_.self_target, std::move(v));
  }

  session_state& st_;
  bool open_;
};

/// Forgets the child `i` (its process actor has its result or is gone).
void forget_child(session_state& st,
                  std::map<caf::actor_addr, session_child>::iterator i) {
  {
    std::lock_guard<std::mutex> guard{st.running->mtx};
    st.running->by_group.erase(i->second.pid);
  }
  st.children.erase(i);
}

/// Gives `v` to the execution's process actor while it lives (its result
/// carries it), else to the session. Called on reactor threads.
void report_violation(const weak_target* process, const weak_target& session,
                      violation v) {
  std::vector<violation> one{std::move(v)};
  bool sent = false;
  sandbox::detail::tsan_release_handover();
  if (process != nullptr)
    process->gate->run([&] {
      if (auto strong = process->actor.lock()) {
        caf::anon_send(caf::actor_cast<process_actor_impl>(strong),
                       violations_atom_v, one);
        sent = true;
      }
    });
  if (!sent)
    send_if_alive<session_actor_impl>(session, violations_atom_v, one);
}

/// Places the node's placeholders over a contained session's denied paths
/// where the host lets the node watch their opens (read_guard.hpp): each
/// refused read is a `read_denied` violation of the execution whose process
/// group read it (of the session, execution 0, when none matches).
result<void> cover_denied(session_state& st, containment_spec& spec) {
  auto guard = st.p.rt->read_guard();
  if (!guard || spec.deny.empty())
    return {};
  auto cover = guard->make_cover(
    st.p.rt->config().temp_directory, spec.deny,
    [running = st.running, session = *st.self_target](denied_read d) {
      violation v{violation_kind::read_denied, 0, std::move(d.path)};
      std::optional<weak_target> process;
      {
        std::lock_guard<std::mutex> guard{running->mtx};
        auto i = running->by_group.find(d.pgid);
        if (i != running->by_group.end()) {
          v.execution = i->second.first;
          process = i->second.second;
        } else if (running->launching > 0) {
          running->unclaimed[d.pgid].push_back(std::move(v));
          return;
        }
      }
      report_violation(process ? &*process : nullptr, session, std::move(v));
    },
    {spec.working_directory, spec.home_directory});
  if (!cover)
    return cover.error();
  spec.placeholders = (*cover)->placeholders();
  spec.mounts = (*cover)->mounts();
  st.read_cover = std::move(*cover);
  return {};
}

/// Reports what the seccomp filter of a contained command sees that
/// Landlock or the network namespace will refuse: to the execution's
/// process actor while it lives (its result carries them), else to the
/// session.
void watch_execution(self_ptr self, const process_actor_impl& handle,
                     uint64_t exec_id, unique_fd listener) {
  auto& st = self->state;
  auto policy = std::make_shared<watch_policy>();
  policy->writable = writable_directories(st);
  policy->execution = exec_id;
  auto process = weak_process(handle, *st.p.rt);
  watch_syscalls(st.p.rt->reactor(), std::move(listener), std::move(policy),
                 [process, session = *st.self_target](violation v) {
                   report_violation(&process, session, std::move(v));
                 });
}

/// What the filesystem worker of a contained session sees: the session's
/// mount namespace (its init starts here when no command ran yet), with
/// the write rules of its commands and its denied paths refused by name.
/// None for other sessions.
result<std::shared_ptr<const fs::session_view>>
contained_view(session_state& st) {
  if (st.p.isolation != isolation_mode::contained)
    return std::shared_ptr<const fs::session_view>{};
  if (auto ok = ensure_home(st); !ok)
    return ok.error();
  if (auto ok = ensure_contained(st); !ok)
    return ok.error();
  fs::view_policy policy;
  policy.deny = st.p.deny;
  policy.kept = {st.p.working_directory, st.p.home_directory};
  policy.writable = writable_directories(st);
  return fs::session_view::open(
    fmt::format("/proc/{}/root", st.contained->init_pid()), std::move(policy));
}

result<launched>
start(self_ptr self, result<launch_spec> spec, const exec_options& opts,
      chunk_sink sink, uint64_t exec_id,
      std::optional<std::string> initial_stdin, bool keep_stdin = false) {
  auto& st = self->state;
  if (!spec)
    return spec.error();
  if (auto ok = check_cancel_key(st, opts.cancel_key); !ok)
    return ok.error();
  // §1: commands run with stdin closed (/dev/null); code gets its source on
  // stdin; spawned processes keep a stdin pipe.
  spec->pipe_stdin = keep_stdin || initial_stdin.has_value();
  if (st.cgroups)
    spec->cgroup = st.cgroups->take();
  if (spec->cgroup.empty()) {
    auto cgroup = st.p.rt->execution_cgroup(st.p.id, exec_id);
    if (!cgroup)
      return cgroup.error();
    spec->cgroup = std::move(*cgroup);
  }
  if (!spec->cgroup.empty()) {
    if (!st.cgroups)
      st.cgroups = std::make_shared<cgroup_pool>();
    spec->cgroup_reuse = st.cgroups;
  }
  if (auto ok = ensure_contained(st); !ok)
    return ok.error();
  if (st.contained) {
    auto& c = spec->contain;
    c.ns_pidfd = st.contained->init_pidfd();
    c.landlock_ruleset = st.contained->ruleset_fd();
    c.cpu_seconds = st.p.limits.cpu_seconds;
    c.file_size = st.p.limits.file_size;
    c.open_files = st.p.limits.open_files;
    if (host_isolation().syscall_watch)
      c.watch_filter = watch_filter();
    auto join = st.cgroup_limits->join_fds();
    for (size_t i = 0; i < join.size() && i < 2; ++i)
      c.join_cgroups[i] = join[i];
  }
  launch_window window{st};
  // The watchdog kills the node's cgroups: a child born in one needs no
  // record of its group.
  auto child = st.p.rt->reaper()->launch_owned(
    [&] { return child_process::start(st.p.rt->reactor(), *spec); },
    spec->cgroup.empty() || !st.p.rt->cgroups_watched());
  if (!child)
    return child.error();
  process_params params;
  params.rt = st.p.rt;
  params.child = *child;
  params.sink = std::move(sink);
  params.timeout = opts.timeout;
  params.output_cap = opts.output_cap > 0 ? opts.output_cap
                                          : st.p.rt->config().output_cap;
  params.marker_prefix = fmt::format("{}={}/{}/", marker_variable, st.p.id,
                                     exec_id);
  params.initial_stdin = std::move(initial_stdin);
  params.spawned = keep_stdin;
  auto& caller = self->current_sender();
  params.last = caller && caller->node() != self->node();
  params.session = self->address();
  params.session_id = st.p.id;
  params.exec = exec_id;
  if (st.contained) {
    params.limits = st.cgroup_limits;
    params.limits_before = st.cgroup_limits->read();
  }
  auto pid = (*child)->pid();
  auto kind = keep_stdin ? "spawn" : params.initial_stdin ? "code" : "run";
  log::logger()->debug("{} launched pid {} ({})", log::tag{st.p.id, exec_id},
                       pid, kind);
  auto listener = (*child)->take_watch_listener();
  launched out;
  process_actor_impl handle;
  if (keep_stdin) {
    handle = window.attach(pid, params, [&] {
      return spawn_process(self->system(), std::move(params));
    });
  } else {
    // The session's idle execution actor takes it, else a new one.
    handle = window.attach(pid, params, [&] {
      if (st.idle)
        return std::exchange(st.idle, nullptr);
      return spawn_process(self->system());
    });
    out.start.params = std::make_shared<process_params>(std::move(params));
  }
  self->monitor(handle);
  if (listener)
    watch_execution(self, handle, exec_id, std::move(listener));
  out.child = session_child{handle, pid, opts.cancel_key, keep_stdin,
                            !keep_stdin && !out.start.params->last};
  st.children.emplace(handle.address(), out.child);
  st.groups.push_back(pid);
  return out;
}

void maybe_complete_stop(self_ptr self) {
  auto& st = self->state;
  if (!st.sweep || st.awaiting > 0 || st.receipt)
    return;
  st.receipt = *st.sweep;
  log::logger()->info("{} stopped: {} ended, {} killed, {} survivors ({})",
                      log::tag{st.p.id}, st.receipt->ended, st.receipt->killed,
                      st.receipt->survivors, to_string(st.receipt->mode));
  // A contained session's PID namespace ends with its init: whatever the
  // sweep could not find there is killed by the kernel. Before the receipt
  // goes out: an init the sweep ended already is reaped at once, its
  // descriptor closed.
  st.contained.reset();
  st.read_cover.reset();
  st.cgroup_limits.reset();
  // A working directory the node made for the session goes with it when
  // the session left nothing there (one rmdir: it fails on a directory
  // that holds anything, which stays for whoever wants its files).
  if (st.p.own_working_directory)
    ::rmdir(st.p.working_directory.c_str());
  // §22: the leased port is free again once nothing of the session runs,
  // before the receipt goes out: whoever got it can lease the port again.
  if (st.p.lease) {
    log::logger()->debug("{} released port {}", log::tag{st.p.id},
                         st.p.lease->port());
    st.p.lease->release();
  }
  // The node forgets a session stopped through its own handle too; told
  // before the receipt goes out, so that whoever got it finds the session
  // gone from the node.
  if (auto node = caf::actor_cast<node_actor_impl>(st.p.node))
    self->send(node, ended_atom_v, st.p.id);
  for (auto& w : st.stop_waiters)
    w.deliver(*st.receipt);
  st.stop_waiters.clear();
  // Dropping the handles lets finished process actors go away.
  st.children.clear();
  {
    std::lock_guard<std::mutex> guard{st.running->mtx};
    st.running->by_group.clear();
  }
  st.groups.clear();
  for (auto& addr : st.finished)
    if (auto p = caf::actor_cast<process_actor_impl>(addr))
      self->send(p, end_atom_v, exit_reason::stopped);
  st.finished.clear();
  // The worker answers `session_stopped` to whoever still holds it.
  st.files = nullptr;
  // A stopped session lives on for local handles, answering
  // `session_stopped`, and goes away with the last one. A handle that went
  // out over the network is never dropped (CAF's registry keeps the actor):
  // such a session quits now, with its worker and processes.
  if (handed_out(self))
    self->quit();
}

void begin_stop(self_ptr self) {
  auto& st = self->state;
  st.stopped = true;
  st.idle = nullptr;
  // Its sweep removes its cgroups, those of ended executions too.
  if (st.cgroups)
    st.cgroups->close();
  // Nothing reaches the session's servers, nor leaves it, from now on.
  stop_network(st);
  if (st.files) {
    // The receipt waits for the worker: its open writes are gone by then.
    ++st.awaiting;
    self->request(st.files, caf::infinite, stop_atom_v)
      .then(
        [self](ok_atom) {
          --self->state.awaiting;
          maybe_complete_stop(self);
        },
        [self](caf::error&) {
          --self->state.awaiting;
          maybe_complete_stop(self);
        });
  }
  std::vector<pid_t> own;
  for (auto& [addr, c] : st.children) {
    self->send(c.handle, end_atom_v, exit_reason::stopped);
    own.push_back(c.pid);
    // Every execution in flight ends with `stopped` before the receipt.
    ++st.awaiting;
    self->request(c.handle, caf::infinite, wait_atom_v)
      .then(
        [self](const exec_result&) {
          --self->state.awaiting;
          maybe_complete_stop(self);
        },
        [self](caf::error&) {
          --self->state.awaiting;
          maybe_complete_stop(self);
        });
  }
  auto session_cgroup = st.p.rt->session_cgroup(st.p.id);
  // A contained session's init holds its cgroup (`init`, ensure_contained)
  // from its first command or file operation on: swept even when no
  // command ran, so that its cgroup goes too.
  if (st.groups.empty() && !(st.contained && !session_cgroup.empty())) {
    // Nothing was ever started: no process can carry the marker, so there
    // is nothing to sweep.
    st.sweep = stop_receipt{};
    st.sweep->mode = st.p.rt->containment();
    maybe_complete_stop(self);
    return;
  }
  auto q = executions_query(own, st.groups, st.marker_prefix);
  q.cgroup = std::move(session_cgroup);
  // The init is neither signalled nor counted: it ends (and with it the
  // PID namespace) once the commands did, or with them at the kill stage.
  if (st.contained && !q.cgroup.empty())
    q.cgroup_keep = "init";
  q.log_tag = fmt::format("{}", log::tag{st.p.id});
  async_terminate(st.p.rt->reactor(), st.p.rt->reaper(), std::move(q),
                  std::move(own), st.p.rt->config().stop,
                  [weak = weak_self(self, *st.p.rt)](stop_receipt receipt) {
                    send_if_alive<session_actor_impl>(weak, ended_atom_v,
                                                      receipt);
                  });
}

} // namespace

session_actor_impl::behavior_type session_behavior(self_ptr self,
                                                   session_params params) {
  auto& st = self->state;
  st.p = std::move(params);
  st.home_ready = !st.p.private_home;
  if (auto ok = start_inbound(st); !ok)
    log::logger()->warn("{} port {} is not forwarded: {}", log::tag{st.p.id},
                        st.p.lease ? st.p.lease->port() : 0,
                        ok.error().message);
  st.marker_prefix = fmt::format("{}={}/", marker_variable, st.p.id);
  st.self_target = weak_self(self, *st.p.rt);
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
      return self->delegate(s->child.handle, start_atom_v, std::move(s->start));
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
      return self->delegate(s->child.handle, start_atom_v, std::move(s->start));
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
      process_actor handle = s->child.handle;
      return {handle, static_cast<int32_t>(s->child.pid)};
    },
    [self](cancel_atom, const std::string& key) -> bool {
      auto& st = self->state;
      if (key.empty())
        return false;
      // At most one running child holds a key (check_cancel_key).
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
      info.children = static_cast<uint32_t>(st.children.size());
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
      auto& v = self->state.violations;
      for (auto& x : seen) {
        log::logger()->info("{} violation: {} {}",
                            log::tag{self->state.p.id, x.execution},
                            to_string(x.kind), x.detail);
        v.push_back(std::move(x));
        if (v.size() > max_session_violations)
          v.erase(v.begin());
      }
    },
    [self](ended_atom, const stop_receipt& receipt) {
      self->state.sweep = receipt;
      maybe_complete_stop(self);
    },
    [self](exited_atom) {
      // A process actor has its result: its child no longer runs, and the
      // session lets go of it (a stop in progress awaits its result by a
      // request of its own).
      auto& st = self->state;
      auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
      auto i = st.children.find(sender);
      if (i == st.children.end())
        return;
      if (i->second.spawned && !st.stopped)
        st.finished.insert(sender);
      // An execution's actor serves the next execution; a second one (two
      // ran at once) goes away with its handle, one whose caller was remote
      // quits by itself.
      if (i->second.reusable && !st.stopped && !st.idle)
        st.idle = i->second.handle;
      forget_child(st, i);
    },
  };
}

session_actor spawn_session(caf::actor_system& sys, session_params params) {
  return sys.spawn(session_behavior, std::move(params));
}

std::vector<std::string> allowlist_to_resolve(const runtime& rt,
                                              const session_config& cfg) {
  auto isolation = cfg.isolation ? *cfg.isolation : rt.config().isolation;
  if (isolation != isolation_mode::contained)
    return {};
  return cfg.allow_net ? *cfg.allow_net : rt.config().allow_net;
}

result<session_params>
make_session_params(runtime_ptr rt, const session_config& cfg,
                    const std::string& base_directory,
                    const result<std::vector<net_destination>>* allow) {
  for (auto [name, path] :
       {std::pair{"working_directory", &cfg.working_directory},
        std::pair{"home_directory", &cfg.home_directory}})
    if (!path->empty())
      if (auto ok = fs::validate_path(*path); !ok)
        return error{errc::invalid_argument,
                     fmt::format("invalid session_config.{}: {}", name,
                                 ok.error().message)};
  if (auto ok = validate_env(cfg.env); !ok)
    return ok.error();
  auto cwd = current_directory();
  if (!cwd)
    return cwd.error();
  if (cfg.allow_net)
    for (auto& entry : *cfg.allow_net)
      if (auto ok = validate_allow_entry(entry); !ok)
        return error{errc::invalid_argument,
                     fmt::format("invalid session_config.allow_net: {}",
                                 ok.error().message)};
  session_params p;
  p.isolation = cfg.isolation ? *cfg.isolation : rt->config().isolation;
  if (p.isolation != isolation_mode::contained && cfg.allow_net
      && !cfg.allow_net->empty())
    return error{errc::invalid_argument,
                 fmt::format("session_config.allow_net ({}) applies to "
                             "contained sessions only: this one is {}",
                             cfg.allow_net->front(), to_string(p.isolation))};
  if (p.isolation == isolation_mode::contained) {
    auto missing = host_isolation().missing(cfg.limits);
    if (missing.empty() && (cfg.limits.memory > 0 || cfg.limits.processes > 0)
        && rt->containment() != containment_mode::cgroup)
      missing = "the cgroup mode (for a memory or process limit)";
    if (!missing.empty())
      return error{errc::unsupported,
                   fmt::format("cannot create a contained session: this "
                               "host lacks {}",
                               missing)};
    p.limits = cfg.limits;
    // Names are looked up once, by the caller or here (see
    // docs/security.md).
    std::optional<result<std::vector<net_destination>>> here;
    if (allow == nullptr)
      allow = &here.emplace(resolve_allowlist(allowlist_to_resolve(*rt, cfg)));
    if (!*allow)
      return error{errc::invalid_argument,
                   fmt::format("invalid session_config.allow_net: {}",
                               allow->error().message)};
    p.allow_net = **allow;
    p.deny = rt->config().isolation_deny;
    if (!base_directory.empty())
      p.deny.push_back(fs::resolve(*cwd, base_directory));
  }
  p.id = make_uuid_v4();
  std::string requested = cfg.working_directory;
  if (requested.empty() && !base_directory.empty()) {
    requested = base_directory + "/" + p.id;
    p.own_working_directory = true;
  } else if (requested.empty()) {
    requested = ".";
  }
  auto wd = make_directories(fs::resolve(*cwd, requested), "working directory");
  if (!wd)
    return wd.error();
  if (cfg.home_directory.empty()) {
    // Made, private, at the first execution (ensure_home).
    p.home_directory = fs::resolve(*cwd,
                                   default_home(rt->config().temp_directory));
    p.private_home = true;
  } else {
    auto hd = make_directories(fs::resolve(*cwd, cfg.home_directory),
                               "home directory");
    if (!hd)
      return hd.error();
    p.home_directory = std::move(*hd);
  }
  p.rt = std::move(rt);
  p.working_directory = std::move(*wd);
  p.env = cfg.env;
  return p;
}

} // namespace sandbox::actors
