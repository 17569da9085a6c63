#include "sandbox/contain/isolation.hpp"
#include "sandbox/contain/contained_session.hpp"
#include "sandbox/contain/read_guard.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <fmt/format.h>

#include "contain/landlock.hpp"
#include "contain/session_identity.hpp"
#include "contain/session_init.hpp"
#include "process/vm_child.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/io/reactor.hpp"
#include "sandbox/log.hpp"
#include "sandbox/process/process_tree.hpp"

namespace sandbox {

using detail::make_ruleset;
using detail::probe_landlock;

std::string_view to_string(isolation_mode x) noexcept {
  return x == isolation_mode::contained ? "contained" : "none";
}

result<isolation_mode> parse_isolation(std::string_view text) {
  if (text == "none")
    return isolation_mode::none;
  if (text == "contained")
    return isolation_mode::contained;
  return error{errc::invalid_argument,
               fmt::format("invalid isolation {:?}: must be none or "
                           "contained",
                           std::string{text})};
}

namespace {

std::vector<std::string> own_controllers() {
  std::vector<std::string> out;
  auto own = find_own_cgroup();
  if (!own)
    return out;
  std::string text;
  // What the node's directories below its own cgroup can get.
  if (!read_small_file(*own + "/cgroup.subtree_control", text))
    return out;
  std::string word;
  for (char c : text + " ") {
    if (c == ' ' || c == '\n') {
      if (!word.empty())
        out.push_back(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  return out;
}

/// The node's own directory in the v1 hierarchy of `controller` when a
/// directory can be made below it; empty otherwise.
std::string usable_v1_directory(const char* controller) {
  auto own = find_own_cgroup_v1(controller);
  if (!own)
    return {};
  auto probe = fmt::format("{}/sandbox-probe-{}", *own, ::getpid());
  if (::mkdir(probe.c_str(), 0755) != 0)
    return {};
  ::rmdir(probe.c_str());
  return *own;
}

/// Kills `pidfd`'s process and reaps it, blocking.
void kill_and_reap(pid_t pid, int pidfd) {
  ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
  detail::reap(pid);
}

/// Reaps a contained session's init once: when its pidfd reports the end
/// on the reactor, or else when the wait is dropped unrun (the reactor was
/// destroyed first: Asio destroys pending handlers without calling them),
/// so that no zombie is left to the host either way.
struct pending_init_reap {
  pending_init_reap(boost::asio::io_context& io, pid_t pid, unique_fd pidfd,
                    std::shared_ptr<session_limits> held,
                    std::shared_ptr<detail::id_lease> ids)
    : desc(io, pidfd.release()),
      pid(pid),
      held(std::move(held)),
      ids(std::move(ids)) {
  }
  ~pending_init_reap() {
    if (reaped)
      return;
    // The init was killed already; it ends once every process of its
    // namespace was reaped. The node's own commands are reaped by their
    // own watches, which the same teardown may not have dropped yet: the
    // wait is bounded.
    struct pollfd ended {
      desc.native_handle(), POLLIN, 0
    };
    if (::poll(&ended, 1, 5000) == 1)
      reap();
    else
      log::logger()->warn("the init {} of a contained session did not end "
                          "within 5 s of the reactor's end: left unreaped",
                          pid);
  }
  void reap() noexcept {
    if (reaped)
      return;
    reaped = true;
    kill_and_reap(pid, desc.native_handle());
    held.reset();
    ids.reset();
  }
  boost::asio::posix::stream_descriptor desc;
  pid_t pid;
  std::shared_ptr<session_limits> held;
  /// Free for another session once nothing of this one runs.
  std::shared_ptr<detail::id_lease> ids;
  bool reaped = false;
};

} // namespace

bool isolation_support::has_controller(std::string_view name) const {
  return std::find(cgroup_controllers.begin(), cgroup_controllers.end(), name)
           != cgroup_controllers.end()
         || !v1_directory(name).empty();
}

std::string isolation_support::v1_directory(std::string_view name) const {
  for (auto& [ctl, dir] : cgroup_v1)
    if (ctl == name)
      return dir;
  return {};
}

std::string isolation_support::missing(const isolation_limits& limits) const {
  std::vector<std::string> out;
  if (!namespaces)
    out.push_back(fmt::format("namespaces ({})", namespaces_detail));
  if (landlock_abi < min_landlock_abi)
    out.push_back(landlock_abi == 0
                    ? fmt::format("Landlock ({})", landlock_detail)
                    : fmt::format("Landlock ABI {} (the host has ABI {})",
                                  min_landlock_abi, landlock_abi));
  if (limits.memory > 0 && !has_controller("memory"))
    out.push_back("the cgroup memory controller, v2 or v1 (for a memory "
                  "limit)");
  if (limits.processes > 0 && !has_controller("pids"))
    out.push_back("the cgroup pids controller, v2 or v1 (for a process "
                  "limit)");
  std::string s;
  for (auto& x : out)
    s += (s.empty() ? "" : "; ") + x;
  return s;
}

const isolation_support& host_isolation() {
  static const isolation_support support = [] {
    isolation_support s;
    s.landlock_abi = probe_landlock(s.landlock_detail);
    s.cgroup_controllers = own_controllers();
    {
      seccomp_notif_sizes sizes{};
      s.syscall_watch
        = ::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0;
    }
    s.read_watch = read_guard::available();
    s.lookup_watch = read_guard::lookup_watch();
    for (auto ctl : {"memory", "pids"})
      if (!s.has_controller(ctl))
        if (auto dir = usable_v1_directory(ctl); !dir.empty())
          s.cgroup_v1.emplace_back(ctl, std::move(dir));
    auto* base = ::getenv("TMPDIR");
    std::string templ = fmt::format("{}/sandbox-probe-XXXXXX",
                                    base != nullptr && *base != '\0' ? base
                                                                     : "/tmp");
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      s.namespaces_detail = fmt::format("mkdtemp {}: {}", templ,
                                        std::strerror(errno));
      return s;
    }
    containment_spec spec;
    spec.working_directory = buf.data();
    spec.home_directory = buf.data();
    spec.id_count = default_session_id_count;
    // With ids of its own where the node may map them (an id-mapped
    // working directory in the temporary directory), else with its own.
    s.own_ids_detail = detail::why_no_own_ids();
    if (s.own_ids_detail.empty()) {
      auto sess = contained_session::start(spec, /* ruleset */ false, true);
      s.own_ids = s.namespaces = static_cast<bool>(sess);
      if (!sess)
        s.own_ids_detail = sess.error().message;
    }
    if (!s.own_ids) {
      auto sess = contained_session::start(spec, /* ruleset */ false, false);
      s.namespaces = static_cast<bool>(sess);
      if (!sess)
        s.namespaces_detail = sess.error().message;
    }
    ::rmdir(buf.data());
    return s;
  }();
  return support;
}

result<std::unique_ptr<contained_session>>
contained_session::start(const containment_spec& spec) {
  return start(spec, true, host_isolation().own_ids && spec.id_count > 0);
}

result<std::unique_ptr<contained_session>>
contained_session::start(const containment_spec& spec, bool with_ruleset,
                         bool own_ids) {
#if !defined(__x86_64__)
  (void) spec, (void) with_ruleset, (void) own_ids;
  return error{errc::unsupported, "contained sessions exist for x86_64 only"};
#else
  std::shared_ptr<detail::id_lease> ids;
  if (own_ids) {
    auto taken = detail::id_lease::take(spec.id_base, spec.id_count);
    if (!taken)
      return taken.error();
    ids = std::move(*taken);
  }
  auto init = detail::start_init(spec, ids.get());
  if (!init)
    return init.error();
  std::unique_ptr<contained_session> s{new contained_session};
  s->ids_ = std::move(ids);
  s->pid_ = init->pid;
  s->pidfd_ = std::move(init->pidfd);
  s->limits_ = spec.limits;
  s->cgroup_limits_ = spec.cgroup_limits;
  if (with_ruleset) {
    auto& host = host_isolation();
    if (host.landlock_abi < min_landlock_abi)
      return error{errc::unsupported, host.missing()};
    auto ruleset = make_ruleset(s->pid_, spec, host.landlock_abi);
    if (!ruleset)
      return ruleset.error();
    s->ruleset_ = std::move(*ruleset);
  }
  return s;
#endif
}

int64_t contained_session::session_uid() const noexcept {
  return ids_ ? static_cast<int64_t>(ids_->id()) : -1;
}

void contained_session::kill() noexcept {
  if (pidfd_)
    ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
}

contained_session::~contained_session() {
  if (!pidfd_)
    return;
  kill();
  // Without a reactor, or when it has ended already (a stop's sweep killed
  // it once the commands had ended): reaped here, without waiting.
  struct pollfd ended {
    pidfd_.get(), POLLIN, 0
  };
  if (reactor_ == nullptr || ::poll(&ended, 1, 0) == 1) {
    kill_and_reap(pid_, pidfd_.get());
    return;
  }
  // The init ends once the node has reaped every command of the session:
  // wait for that on the reactor, not here.
  auto pending = std::make_shared<pending_init_reap>(reactor_->context(), pid_,
                                                     std::move(pidfd_),
                                                     std::move(cgroup_limits_),
                                                     std::move(ids_));
  pending->desc.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                           [pending](const boost::system::error_code&) {
                             pending->reap();
                           });
}

} // namespace sandbox
