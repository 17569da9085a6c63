#include "sandbox/actors/session.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <map>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_response_promise.hpp>

#include <fmt/format.h>

#include "sandbox/actors/filesystem.hpp"
#include "sandbox/actors/process.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/process_tree.hpp"
#include "sandbox/uuid.hpp"
#include "sandbox/validation.hpp"

namespace sandbox::actors {

/// One child of a session, as the session tracks it.
struct session_child {
  process_actor_impl handle;
  pid_t pid = 0;
  std::string cancel_key;
};

/// State of one session actor; owned by the actor alone.
struct session_state {
  static inline const char* name = "sandbox.session";

  session_params p;
  /// `SANDBOX_EXEC=<id>/`: the environment entry of every descendant.
  std::string marker_prefix;
  /// Process actors whose result is not yet collected, by address.
  std::map<caf::actor_addr, session_child> children;
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

  session_state() = default;
  session_state(const session_state&) = delete;
  session_state& operator=(const session_state&) = delete;

  /// A session that goes away without a stop (its last handle dropped, its
  /// owner crashed) still ends every process of its own.
  ~session_state() {
    if (stopped || !p.rt)
      return;
    tree_query q;
    q.groups = groups;
    q.marker_prefix = marker_prefix;
    std::vector<pid_t> own;
    for (auto& [addr, c] : children) {
      q.roots.push_back(c.pid);
      own.push_back(c.pid);
    }
    async_terminate(p.rt->reactor(), p.rt->reaper(), std::move(q),
                    std::move(own), p.rt->config().stop, nullptr);
  }
};

namespace {

using self_ptr = session_actor_impl::stateful_pointer<session_state>;

caf::error to_caf(const sandbox::error& e) {
  return caf::make_error(e.code, e.message);
}

caf::error stopped_error(const session_state& st) {
  return caf::make_error(errc::session_stopped,
                         fmt::format("session {} is stopped", st.p.id));
}

/// The child's environment, lowest layer first (R4): node process env <
/// HOME < session env < per-call env, plus the marker entry.
env_map layered_env(const session_state& st, const env_map& call,
                    uint64_t exec_id) {
  env_map env = st.p.rt->base_env();
  env["HOME"] = st.p.home_directory;
  for (auto& [k, v] : st.p.env)
    env[k] = v;
  for (auto& [k, v] : call)
    env[k] = v;
  env[std::string{marker_variable}] = fmt::format("{}/{}/", st.p.id, exec_id);
  return env;
}

/// Validates `opts` and `command` and builds the launch (R2, R3): nothing
/// is spawned when any input is bad.
result<launch_spec> prepare(const session_state& st, const std::string& cmd,
                            const exec_options& opts, uint64_t exec_id) {
  if (auto ok = validate_command(cmd); !ok)
    return ok.error();
  if (auto ok = validate_env(opts.env); !ok)
    return ok.error();
  launch_spec spec;
  spec.cwd = opts.cwd.empty()
               ? st.p.working_directory
               : fs::resolve(st.p.working_directory, opts.cwd);
  struct stat info;
  if (::stat(spec.cwd.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return error{errc::path_not_found,
                 fmt::format("working directory does not exist: {}",
                             spec.cwd)};
  spec.executable = st.p.rt->config().shell;
  spec.argv = {spec.executable, "-c", cmd};
  spec.env = layered_env(st, opts.env, exec_id);
  return spec;
}

/// The script that runs code with an interpreter (R7): the code arrives
/// on stdin, byte-exact, and is never seen by a shell parser. "$0" is the
/// language, validated before.
constexpr const char* code_runner
  = "command -v \"$0\" >/dev/null 2>&1 || "
    "{ printf 'Language interpreter not found: %s\\n' \"$0\" >&2; "
    "exit 127; }; exec \"$0\"";

struct started {
  process_actor_impl handle;
  pid_t pid;
};

result<started> start(self_ptr self, result<launch_spec> spec,
                      const exec_options& opts, chunk_sink sink,
                      uint64_t exec_id,
                      std::optional<std::string> initial_stdin,
                      bool keep_stdin = false) {
  auto& st = self->state;
  if (!spec)
    return spec.error();
  // R1: commands run with stdin closed (/dev/null); code gets its source on
  // stdin; spawned processes keep a stdin pipe.
  spec->pipe_stdin = keep_stdin || initial_stdin.has_value();
  auto child = st.p.rt->reaper()->launch_owned(
    [&] { return child_process::start(st.p.rt->reactor(), *spec); });
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
  auto pid = (*child)->pid();
  auto handle = spawn_process(self->system(), std::move(params));
  self->monitor(handle);
  st.children.emplace(handle.address(),
                      session_child{handle, pid, opts.cancel_key});
  st.groups.push_back(pid);
  return started{handle, pid};
}

void maybe_complete_stop(self_ptr self) {
  auto& st = self->state;
  if (!st.sweep || st.awaiting > 0 || st.receipt)
    return;
  st.receipt = *st.sweep;
  for (auto& w : st.stop_waiters)
    w.deliver(*st.receipt);
  st.stop_waiters.clear();
  // Dropping the handles lets finished process actors go away.
  st.children.clear();
  st.groups.clear();
  // R22: the leased port is free again once nothing of the session runs.
  if (st.p.lease)
    st.p.lease->release();
}

void begin_stop(self_ptr self) {
  auto& st = self->state;
  st.stopped = true;
  if (st.files)
    caf::anon_send(st.files, stop_atom_v);
  tree_query q;
  q.groups = st.groups;
  q.marker_prefix = st.marker_prefix;
  std::vector<pid_t> own;
  for (auto& [addr, c] : st.children) {
    self->send(c.handle, end_atom_v, exit_reason::stopped);
    q.roots.push_back(c.pid);
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
  if (st.groups.empty()) {
    // Nothing was ever started: no process can carry the marker, so there
    // is nothing to sweep.
    st.sweep = stop_receipt{};
    maybe_complete_stop(self);
    return;
  }
  auto handle = caf::actor_cast<session_actor_impl>(self);
  async_terminate(st.p.rt->reactor(), st.p.rt->reaper(), std::move(q),
                  std::move(own), st.p.rt->config().stop,
                  [handle](stop_receipt receipt) {
                    caf::anon_send(handle, ended_atom_v, receipt);
                  });
}

} // namespace

session_actor_impl::behavior_type session_behavior(self_ptr self,
                                                   session_params params) {
  auto& st = self->state;
  st.p = std::move(params);
  st.marker_prefix = fmt::format("{}={}/", marker_variable, st.p.id);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    auto i = st.children.find(msg.source);
    if (i != st.children.end() && !st.stopped)
      st.children.erase(i);
  });
  return {
    [self](execute_atom, std::string& cmd, exec_options& opts,
           chunk_sink& sink) -> caf::result<exec_result> {
      auto& st = self->state;
      if (st.stopped)
        return stopped_error(st);
      auto id = st.p.rt->next_id();
      auto s = start(self, prepare(st, cmd, opts, id), opts, std::move(sink),
                     id, std::nullopt);
      if (!s)
        return to_caf(s.error());
      return self->delegate(s->handle, wait_atom_v);
    },
    [self](code_atom, std::string& code, std::string& language,
           exec_options& opts, chunk_sink& sink) -> caf::result<exec_result> {
      auto& st = self->state;
      if (st.stopped)
        return stopped_error(st);
      if (auto ok = validate_language(language); !ok)
        return to_caf(ok.error());
      auto id = st.p.rt->next_id();
      auto spec = prepare(st, code_runner, opts, id);
      if (spec)
        spec->argv.push_back(language);
      auto s = start(self, std::move(spec), opts, std::move(sink), id,
                     std::move(code));
      if (!s)
        return to_caf(s.error());
      return self->delegate(s->handle, wait_atom_v);
    },
    [self](spawn_atom, std::string& cmd, exec_options& opts,
           chunk_sink& sink) -> caf::result<process_actor, int32_t> {
      auto& st = self->state;
      if (st.stopped)
        return stopped_error(st);
      auto id = st.p.rt->next_id();
      // A spawned process keeps its stdin open for `stdin` and `close`.
      auto s = start(self, prepare(st, cmd, opts, id), opts, std::move(sink),
                     id, std::nullopt, true);
      if (!s)
        return to_caf(s.error());
      process_actor handle = s->handle;
      return {handle, static_cast<int32_t>(s->pid)};
    },
    [self](cancel_atom, const std::string& key) -> bool {
      auto& st = self->state;
      if (key.empty())
        return false;
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
      return info;
    },
    [self](files_atom) -> caf::result<filesystem_actor> {
      auto& st = self->state;
      if (st.stopped)
        return stopped_error(st);
      // Spawned on first use: an idle session costs no worker.
      if (!st.files) {
        st.files = spawn_filesystem(self->system(), st.p.working_directory);
        self->link_to(st.files);
      }
      return st.files;
    },
    [self](ended_atom, const stop_receipt& receipt) {
      self->state.sweep = receipt;
      maybe_complete_stop(self);
    },
  };
}

session_actor spawn_session(caf::actor_system& sys, session_params params) {
  return sys.spawn(session_behavior, std::move(params));
}

namespace {

result<std::string> make_dirs(std::string path, std::string_view what) {
  if (path.empty())
    return error{errc::invalid_argument, fmt::format("{} is empty", what)};
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty())
      continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      return error{errc_from_errno(errno),
                   fmt::format("cannot create {} {}: {}", what, partial,
                               std::strerror(errno))};
  }
  struct stat info;
  if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    return error{errc::invalid_argument,
                 fmt::format("{} is not a directory: {}", what, path)};
  return path;
}

std::string current_dir() {
  char buf[4096];
  return ::getcwd(buf, sizeof(buf)) != nullptr ? std::string{buf}
                                               : std::string{"/"};
}

} // namespace

result<session_params> make_session_params(runtime_ptr rt,
                                           const session_config& cfg,
                                           const std::string& base_directory) {
  if (auto ok = validate_env(cfg.env); !ok)
    return ok.error();
  auto cwd = current_dir();
  session_params p;
  p.id = make_uuid_v4();
  std::string requested = cfg.working_directory;
  if (requested.empty())
    requested = base_directory.empty() ? std::string{"."}
                                       : base_directory + "/" + p.id;
  auto wd = make_dirs(fs::resolve(cwd, requested), "working directory");
  if (!wd)
    return wd.error();
  std::string home = cfg.home_directory;
  if (home.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    home = fmt::format("{}/sandbox/home",
                       tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
  }
  auto hd = make_dirs(fs::resolve(cwd, home), "home directory");
  if (!hd)
    return hd.error();
  p.rt = std::move(rt);
  p.working_directory = std::move(*wd);
  p.home_directory = std::move(*hd);
  p.env = cfg.env;
  return p;
}

} // namespace sandbox::actors
