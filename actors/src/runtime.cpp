#include "runtime.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>

#include "sandbox/contain/read_guard.hpp"
#include "sandbox/contain/session_net.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/log.hpp"
#include "sandbox/process/launcher.hpp"
#include "sandbox/validation.hpp"

namespace sandbox::actors {

namespace {

constexpr size_t max_file_threads = 64;

error invalid(std::string_view name, std::string_view value,
              std::string_view why) {
  return error{errc::invalid_argument,
               fmt::format("invalid runtime_config.{} {}: {}", name, value,
                           why)};
}

result<void> validate_shell(const std::string& shell) {
  auto shown = quote_for_message(shell);
  if (auto ok = fs::validate_path(shell); !ok)
    return invalid("shell", shown, ok.error().message);
  if (shell.front() != '/')
    return invalid("shell", shown, "not an absolute path");
  struct stat st;
  if (::stat(shell.c_str(), &st) != 0)
    return invalid("shell", shown, std::strerror(errno));
  if (!S_ISREG(st.st_mode) || ::access(shell.c_str(), X_OK) != 0)
    return invalid("shell", shown, "not an executable file");
  return {};
}

} // namespace

result<void> validate(const runtime_config& cfg) {
  if (auto ok = validate_shell(cfg.shell); !ok)
    return ok;
  if (cfg.reactor_threads == 0)
    return invalid("reactor_threads", "0", "must be at least 1");
  if (cfg.file_threads == 0 || cfg.file_threads > max_file_threads)
    return invalid("file_threads", std::to_string(cfg.file_threads),
                   fmt::format("must be 1 to {}", max_file_threads));
  if (cfg.output_cap == 0)
    return invalid("output_cap", "0", "must be at least 1 byte");
  if (cfg.stop.first < 1 || cfg.stop.first > SIGRTMAX)
    return invalid("stop.first", std::to_string(cfg.stop.first),
                   fmt::format("not a signal number (1-{})", SIGRTMAX));
  auto ms = [](std::chrono::milliseconds x) {
    return fmt::format("{} ms", x.count());
  };
  if (cfg.stop.grace.count() < 0)
    return invalid("stop.grace", ms(cfg.stop.grace), "must not be negative");
  if (cfg.stop.verify.count() < 0)
    return invalid("stop.verify", ms(cfg.stop.verify), "must not be negative");
  if (cfg.stop.poll.count() <= 0)
    return invalid("stop.poll", ms(cfg.stop.poll), "must be positive");
  if (cfg.linger.count() < 0)
    return invalid("linger", ms(cfg.linger), "must not be negative");
  if (cfg.containment == containment_choice::cgroup) {
    auto own = find_own_cgroup();
    if (!own)
      return invalid("containment", "cgroup", own.error().message);
    if (::access(own->c_str(), W_OK) != 0)
      return invalid("containment", "cgroup",
                     fmt::format("own cgroup {} is not writable: {}", *own,
                                 std::strerror(errno)));
  }
  if (!cfg.temp_directory.empty())
    if (auto ok = fs::validate_path(cfg.temp_directory); !ok)
      return invalid("temp_directory", quote_for_message(cfg.temp_directory),
                     ok.error().message);
  for (auto& entry : cfg.isolation_deny) {
    if (auto ok = fs::validate_path(entry); !ok)
      return invalid("isolation_deny", quote_for_message(entry),
                     ok.error().message);
    if (entry.front() != '/')
      return invalid("isolation_deny", quote_for_message(entry),
                     "not an absolute path");
  }
  if (uint64_t{cfg.isolation_uid_base} + cfg.isolation_uid_count
      > uint64_t{0xfffffffe})
    return invalid("isolation_uid_count",
                   std::to_string(cfg.isolation_uid_count),
                   fmt::format("the range from isolation_uid_base {} must "
                               "end below 4294967294",
                               cfg.isolation_uid_base));
  for (auto& entry : cfg.allow_net)
    if (auto ok = validate_allow_entry(entry); !ok)
      return error{errc::invalid_argument,
                   fmt::format("invalid runtime_config.allow_net: {}",
                               ok.error().message)};
  if (cfg.isolation == isolation_mode::contained)
    if (auto missing = host_isolation().missing(cfg.limits); !missing.empty())
      return error{errc::unsupported,
                   fmt::format("runtime_config.isolation contained: this "
                               "host cannot give it: {}",
                               missing)};
  return {};
}

runtime_ptr make_runtime(runtime_config cfg) {
  return std::make_shared<runtime>(std::move(cfg));
}

void close_actor_gate(runtime& rt) {
  rt.gate()->close();
}

runtime::runtime(runtime_config cfg)
  : cfg_(std::move(cfg)), base_env_(current_environment()) {
  if (cfg_.temp_directory.empty()) {
    auto i = base_env_.find("TMPDIR");
    cfg_.temp_directory = i != base_env_.end() && !i->second.empty()
                            ? i->second
                            : std::string{"/tmp"};
  }
  // SIGPIPE keeps the host's disposition: the reactor's threads block it
  // (child stdin writes fail with EPIPE there). The watchdog starts before
  // the reaper may make this process a subreaper, so that it is never
  // re-parented to us.
  watchdog_ = std::make_unique<sandbox::watchdog::lease>();
  if (cfg_.containment == containment_choice::process_group) {
    containment_detail_ = "forced by runtime_config.containment";
  } else if (auto tree = cgroup_tree::create()) {
    cgroups_ = std::move(*tree);
  } else {
    containment_detail_ = tree.error().message;
    if (cfg_.containment == containment_choice::cgroup)
      sandbox::log::logger()->error("containment cgroup was required: {}",
                                    containment_detail_);
  }
  if (cgroups_) {
    sandbox::log::logger()->info("node start: containment cgroup ({}; "
                                 "children launched with {})",
                                 cgroups_->node_root(), launch_method());
    // Leftovers of nodes whose process died (once per process); then the
    // cgroups of this process's nodes: the watchdog kills them if it dies.
    static std::once_flag leftovers;
    std::call_once(leftovers, [&] { remove_dead_cgroups(cgroups_->own()); });
    cgroups_watched_
      = sandbox::watchdog::watch_cgroup(cgroups_->process_root());
  } else {
    sandbox::log::logger()->info("node start: containment process_group ({})",
                                 containment_detail_);
  }
  if (auto null = open_dev_null())
    dev_null_ = std::move(*null);
  reactor_ = std::make_unique<sandbox::reactor>(cfg_.reactor_threads);
  // A process that is only a node (reap_all_orphans) is a subreaper and
  // reaps every orphan; a host application keeps its own orphan handling
  // and SIGCHLD disposition.
  sandbox::reaper_options ropts;
  ropts.reap_all_orphans = cfg_.reap_all_orphans;
  // In the cgroup mode a tree is held by its cgroup whoever its parent is:
  // no subreaper, no SIGCHLD handler.
  ropts.subreaper = cfg_.reap_all_orphans && !cgroups_;
  reaper_ = sandbox::reaper::make(*reactor_, ropts);
  // An invalid count is refused by the node; the pool still needs a thread.
  files_ = std::make_unique<boost::asio::thread_pool>(
    std::clamp<size_t>(cfg_.file_threads, 1, max_file_threads));
  // A node whose sessions are contained by default holds its read guard
  // (one descriptor) from the start, not from its first session on.
  if (cfg_.isolation == isolation_mode::contained)
    (void) read_guard();
}

runtime::~runtime() {
  // Nothing on a reactor or file thread holds the runtime: callbacks there
  // reach actors only weakly (weak_send.hpp), and an actor's state, which
  // holds the runtime, is destroyed when the actor ends, on its own
  // thread. A thread cannot join itself, so a last reference dropped there
  // would be a bug that corrupts memory later: it stops the process now,
  // naming itself.
  if (reactor_->executor().running_in_this_thread()
      || files_->get_executor().running_in_this_thread()) {
    sandbox::log::logger()->critical(
      "the node's runtime was destroyed on one of its own reactor or file "
      "threads: a reference to it escaped onto them (a bug)");
    std::abort();
  }
  // Its group closes on the reactor: before that stops.
  read_guard_.reset();
  // File jobs in flight finish first (they reach actors through the gate).
  files_.reset();
  // The reaper's signal set lives on the reactor: destroy it first.
  reaper_.reset();
  reactor_.reset();
  cgroups_.reset();
  // Last: "bye" to the watchdog once nothing of this runtime runs.
  watchdog_.reset();
}

const std::string& runtime::cgroup_root() const noexcept {
  static const std::string none;
  return cgroups_ ? cgroups_->node_root() : none;
}

std::string runtime::session_cgroup(const std::string& id) const {
  return cgroups_ ? cgroups_->session_path(id) : std::string{};
}

result<std::string> runtime::execution_cgroup(const std::string& id,
                                              uint64_t exec) const {
  if (!cgroups_)
    return std::string{};
  return cgroups_->make_execution(id, exec);
}

std::shared_ptr<sandbox::read_guard> runtime::read_guard() {
  std::lock_guard<std::mutex> guard{read_guard_mtx_};
  if (!read_guard_tried_) {
    read_guard_tried_ = true;
    if (sandbox::read_guard::available()) {
      if (auto g = sandbox::read_guard::start(*reactor_))
        read_guard_ = std::move(*g);
      else
        sandbox::log::logger()->warn("reads of denied paths are not "
                                     "reported: {}",
                                     g.error().message);
    }
  }
  return read_guard_;
}

} // namespace sandbox::actors
