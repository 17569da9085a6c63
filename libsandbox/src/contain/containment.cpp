#include "sandbox/contain/containment.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include <fmt/format.h>

#include "contain/init_view.hpp"
#include "contain/session_launcher.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/contain/syscall_watch.hpp"
#include "sandbox/contain/tcp_forwarder.hpp"
#include "sandbox/fs/directories.hpp"
#include "sandbox/fs/view.hpp"
#include "sandbox/log.hpp"
#include "sandbox/process/launcher.hpp"
#include "sandbox/process/process_tree.hpp"

namespace sandbox {

namespace {

/// The `0::` line of `/proc/PID/cgroup`: the cgroup v2 path of process
/// `pid` as the node sees it ("" when unknown).
std::string cgroup_of(pid_t pid) {
  std::string text;
  if (!read_small_file(fmt::format("/proc/{}/cgroup", pid), text))
    return {};
  return cgroup_v2_entry(text).value_or(std::string{});
}

} // namespace

/// The running executions by process group (the leader's pid), shared with
/// the reports that come on reactor threads: a denied read goes straight to
/// its execution's receiver while the reader waits.
struct containment::registry {
  struct execution {
    uint64_t id = 0;
    execution_receiver receiver;
    /// Its own cgroup's path (empty: none), which a process that left
    /// the group is still in.
    std::string cgroup;
  };

  std::mutex mtx;
  session_receiver session;
  std::map<pid_t, execution> by_group;
  /// Launches under way: their children may cause violations before their
  /// groups are registered.
  int launching = 0;
  /// Violations of unknown groups during a launch, until it registers its
  /// group; the rest go to the session when the last launch ends.
  std::map<pid_t, std::vector<violation>> unclaimed;

  /// `v` to `to` when it takes it, else to the session.
  void deliver(const execution_receiver* to, violation v) {
    if (to != nullptr && *to && (*to)(v))
      return;
    if (session)
      session(std::move(v));
  }

  /// A denied read of group `pgid`: to its execution, parked during a
  /// launch, else to the session. With `caller`, a process that left its
  /// execution's group is found by its cgroup.
  void report_group(pid_t pgid, violation v, pid_t caller = 0) {
    std::string cgroup;
    if (caller > 0 && !known(pgid))
      cgroup = cgroup_of(caller);
    execution_receiver to;
    {
      std::lock_guard<std::mutex> guard{mtx};
      auto i = by_group.find(pgid);
      if (i == by_group.end() && !cgroup.empty())
        i = std::find_if(by_group.begin(), by_group.end(), [&](auto& e) {
          auto& path = e.second.cgroup;
          return path.size() >= cgroup.size()
                 && path.compare(path.size() - cgroup.size(), cgroup.size(),
                                 cgroup)
                      == 0;
        });
      if (i != by_group.end()) {
        v.execution = i->second.id;
        to = i->second.receiver;
      } else if (launching > 0) {
        unclaimed[pgid].push_back(std::move(v));
        return;
      }
    }
    deliver(&to, std::move(v));
  }

  bool known(pid_t pgid) {
    std::lock_guard<std::mutex> guard{mtx};
    return by_group.count(pgid) > 0;
  }
};

std::unique_ptr<containment> containment::make(reactor& r,
                                               containment_settings settings,
                                               session_receiver session) {
  return std::unique_ptr<containment>{
    new containment(r, std::move(settings), std::move(session))};
}

containment::containment(reactor& r, containment_settings settings,
                         session_receiver session)
  : reactor_(r),
    settings_(std::move(settings)),
    registry_(std::make_shared<registry>()) {
  registry_->session = std::move(session);
}

containment::~containment() {
  stop_network();
  launcher_.reset();
  session_.reset();
  cover_.reset();
  limits_.reset();
}

result<void> containment::forward_port(unique_fd listener, uint16_t port) {
  sockaddr_in dest{};
  dest.sin_family = AF_INET;
  dest.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  dest.sin_port = htons(port);
  auto f = tcp_forwarder::start(
    reactor_, std::move(listener), reinterpret_cast<sockaddr*>(&dest),
    sizeof(dest), nullptr,
    fmt::format("{} port {}", log::tag{settings_.session_id}, port));
  if (!f)
    return f.error();
  inbound_ = std::move(*f);
  return {};
}

/// The network of a new init: the inbound forwarder reaches inside, and
/// each allowed destination gets its address on the session's loopback and
/// a listener there, forwarded to the real destination from the host.
result<void> containment::start_network() {
  // The forwarders' sockets are made from their own copy of the pidfd.
  auto pidfd = std::make_shared<unique_fd>(
    ::fcntl(session_->init_pidfd(), F_DUPFD_CLOEXEC, 3));
  if (!*pidfd)
    return make_errno_error(errno, "dup of the session init's pidfd");
  // Every forwarder of the session shares one cap (0: none); a refusal is
  // the session's violation.
  std::shared_ptr<connection_budget> budget;
  if (auto max = settings_.limits.max_connections; max > 0)
    budget = std::make_shared<connection_budget>(
      max, [reg = registry_, max](const std::string&) {
        reg->deliver(nullptr, violation{violation_kind::connection_limit, 0,
                                        fmt::format("connections {}", max)});
      });
  if (inbound_) {
    inbound_->set_factory([pidfd] {
      return socket_in_namespace(pidfd->get(), AF_INET, SOCK_STREAM);
    });
    inbound_->set_budget(budget);
  }
  for (auto& d : settings_.allow_net) {
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
      reactor_, std::move(*listener),
      reinterpret_cast<const sockaddr*>(&d.addr), d.addr_len,
      [family]() -> result<unique_fd> {
        unique_fd fd{::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
        if (!fd)
          return make_errno_error(errno, "socket (to an allowed "
                                         "destination)");
        return fd;
      },
      fmt::format("{} to {}:{}", log::tag{settings_.session_id}, d.address,
                  d.port),
      budget);
    if (!f)
      return f.error();
    outbound_.push_back(std::move(*f));
  }
  return {};
}

/// Places the node's placeholders over the denied paths where the host
/// lets the node watch their opens (read_guard.hpp): each refused read is a
/// `read_denied` violation of the execution whose process group read it
/// (of the session, execution 0, when none matches).
result<void> containment::cover_denied(containment_spec& spec) {
  auto guard = settings_.guard ? settings_.guard() : nullptr;
  if (!guard || spec.deny.empty())
    return {};
  auto cover = guard->make_cover(
    settings_.temp_directory, spec.deny,
    [reg = registry_](denied_read d) {
      reg->report_group(d.pgid, violation{violation_kind::read_denied, 0,
                                          std::move(d.path)});
    },
    kept_directories());
  if (!cover)
    return cover.error();
  spec.placeholders = (*cover)->placeholders();
  spec.mounts = (*cover)->mounts();
  cover_ = std::move(*cover);
  return {};
}

result<void> containment::start() {
  if (session_)
    return {};
  containment_spec spec;
  spec.working_directory = settings_.working_directory;
  spec.home_directory = settings_.home_directory;
  spec.allow_read = settings_.allow_read;
  spec.allow_write = settings_.allow_write;
  spec.deny = denied_paths();
  spec.limits = settings_.limits;
  spec.id_base = settings_.id_base;
  spec.id_count = settings_.id_count;
  if (!settings_.session_cgroup.empty()) {
    spec.cgroup = settings_.session_cgroup + "/init";
    // With its parents: a file operation may come before any execution.
    if (auto ok = fs::make_directories(spec.cgroup, 0755); !ok)
      return error{errc::io_error,
                   fmt::format("cannot make cgroup {}: {}", spec.cgroup,
                               ok.error().message)};
  }
  auto limits = session_limits::make(
    settings_.limits,
    settings_.session_cgroup.empty() ? std::string{} : settings_.cgroup_root,
    settings_.session_cgroup, settings_.session_id);
  if (!limits)
    return limits.error();
  limits_ = *limits;
  spec.cgroup_limits = limits_;
  if (auto ok = cover_denied(spec); !ok)
    return ok.error();
  auto s = contained_session::start(spec);
  if (!s) {
    cover_.reset();
    return s.error();
  }
  (*s)->reap_on(reactor_);
  session_ = std::move(*s);
  // Kept for the session's launches; a launch makes its own where these
  // could not be made.
  if (int pair[2];
      ::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) == 0) {
    report_pair_[0].reset(pair[0]);
    report_pair_[1].reset(pair[1]);
  }
  node_pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
  open_devpts();
  start_launcher();
  if (cover_)
    cover_->bind(session_->init_pid());
  if (auto ok = start_network(); !ok) {
    for (auto& f : outbound_)
      f->stop();
    outbound_.clear();
    if (inbound_)
      inbound_->set_factory(nullptr);
    launcher_.reset();
    session_.reset();
    cover_.reset();
    return ok.error();
  }
  return {};
}

void containment::open_devpts() {
  // Opened before any command ran, when nothing of the session could have
  // put anything else at the path; checked to be a devpts all the same.
  auto path = fmt::format("/proc/{}/root/dev/pts", session_->init_pid());
  unique_fd dir{
    ::open(path.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
  struct statfs fs;
  if (!dir || ::fstatfs(dir.get(), &fs) != 0
      || fs.f_type != DEVPTS_SUPER_MAGIC) {
    log::logger()->warn("session {}: no devpts of its own at {}: commands "
                        "cannot have terminals",
                        settings_.session_id, path);
    return;
  }
  pts_dir_ = std::move(dir);
}

void containment::prepare(launch_spec& spec) const {
  auto& c = spec.contain;
  c.ns_pidfd = session_->init_pidfd();
  c.own_ids = session_->own_ids();
  c.landlock_ruleset = session_->ruleset_fd();
  c.cpu_seconds = settings_.limits.cpu_seconds;
  c.file_size = settings_.limits.file_size;
  c.open_files = settings_.limits.open_files;
  if (host_isolation().syscall_watch)
    c.watch_filter = watch_filter();
  c.launcher = launcher_.get();
  c.report_pair[0] = report_pair_[0].get();
  c.report_pair[1] = report_pair_[1].get();
  c.node_pidfd = node_pidfd_.get();
  c.pts_dir = pts_dir_.get();
  auto join = limits_->join_fds();
  for (size_t i = 0; i < join.size() && i < 2; ++i)
    c.join_cgroups[i] = join[i];
}

std::vector<std::string> containment::denied_paths() const {
  auto out = settings_.deny;
  for (auto& s : detail::etc_secrets()) {
    struct stat st;
    if (::lstat(s.c_str(), &st) == 0 && !S_ISLNK(st.st_mode))
      out.push_back(s);
  }
  return out;
}

std::vector<std::string> containment::writable_directories() const {
  std::vector<std::string> out{settings_.working_directory,
                               settings_.home_directory, "/tmp", "/dev/shm"};
  out.insert(out.end(), settings_.allow_write.begin(),
             settings_.allow_write.end());
  return out;
}

std::vector<std::string> containment::kept_directories() const {
  std::vector<std::string> out{settings_.working_directory,
                               settings_.home_directory};
  out.insert(out.end(), settings_.allow_write.begin(),
             settings_.allow_write.end());
  out.insert(out.end(), settings_.allow_read.begin(),
             settings_.allow_read.end());
  return out;
}

containment::launch::launch(containment& c) : c_(c) {
  std::lock_guard<std::mutex> guard{c_.registry_->mtx};
  ++c_.registry_->launching;
}

containment::launch::~launch() {
  close();
}

void containment::launch::attach(
  pid_t pgid, uint64_t exec, const std::string& cgroup,
  const std::function<execution_receiver(std::vector<violation>)>& make) {
  auto& reg = *c_.registry_;
  {
    std::lock_guard<std::mutex> guard{reg.mtx};
    std::vector<violation> early;
    if (auto i = reg.unclaimed.find(pgid); i != reg.unclaimed.end()) {
      early = std::move(i->second);
      reg.unclaimed.erase(i);
      for (auto& v : early)
        v.execution = exec;
    }
    reg.by_group.insert_or_assign(
      pgid, registry::execution{exec, make(std::move(early)), cgroup});
  }
  close();
}

/// The last launch to end gives the violations nobody claimed to the
/// session.
void containment::launch::close() {
  if (!open_)
    return;
  open_ = false;
  auto& reg = *c_.registry_;
  std::map<pid_t, std::vector<violation>> rest;
  {
    std::lock_guard<std::mutex> guard{reg.mtx};
    if (--reg.launching == 0)
      rest.swap(reg.unclaimed);
  }
  for (auto& [pgid, vs] : rest)
    for (auto& v : vs)
      reg.deliver(nullptr, std::move(v));
}

std::shared_ptr<const watch_policy>
containment::policy_of(uint64_t exec) const {
  auto policy = std::make_shared<watch_policy>();
  policy->writable = writable_directories();
  policy->execution = exec;
  policy->scoped_signals = host_isolation().landlock_abi >= 6;
  return policy;
}

void containment::watch(unique_fd listener, uint64_t exec,
                        execution_receiver receiver) {
  watch_syscalls(reactor_, std::move(listener), policy_of(exec),
                 [reg = registry_, to = std::move(receiver)](
                   pid_t, violation v) { reg->deliver(&to, std::move(v)); });
}

/// The launcher's filter is every command's: a report goes to the
/// execution of the caller's process group, as the read guard's do (of
/// the session when the caller left its group).
void containment::start_launcher() {
  if (!host_isolation().syscall_watch)
    return;
  auto l = detail::session_launcher::start(session_->init_pidfd(),
                                           watch_filter());
  if (!l) {
    log::logger()->debug("session {}: each command installs its own watch "
                         "({})",
                         settings_.session_id, l.error().message);
    return;
  }
  watch_syscalls(reactor_, (*l)->take_listener(), policy_of(0),
                 [reg = registry_](pid_t caller, violation v) {
                   reg->report_group(::getpgid(caller), std::move(v), caller);
                 });
  launcher_ = std::move(*l);
}

void containment::report(pid_t pgid, violation v) {
  registry_->report_group(pgid, std::move(v));
}

void containment::forget(pid_t pgid) {
  std::lock_guard<std::mutex> guard{registry_->mtx};
  registry_->by_group.erase(pgid);
}

void containment::forget_all() {
  std::lock_guard<std::mutex> guard{registry_->mtx};
  registry_->by_group.clear();
}

result<std::shared_ptr<const fs::session_view>> containment::view() {
  if (auto ok = start(); !ok)
    return ok.error();
  fs::view_policy policy;
  policy.deny = denied_paths();
  policy.kept = kept_directories();
  policy.writable = writable_directories();
  policy.ids.uid = policy.ids.gid = session_->session_uid();
  return fs::session_view::open(
    fmt::format("/proc/{}/root", session_->init_pid()), std::move(policy));
}

void containment::stop_network() noexcept {
  if (inbound_)
    inbound_->stop();
  inbound_ = nullptr;
  for (auto& f : outbound_)
    f->stop();
  outbound_.clear();
}

} // namespace sandbox
