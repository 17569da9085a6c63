// Measuring helpers shared by every scenario: statistics, memory, raw
// process launches for the baselines, scratch files.

#include "bench.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace sandbox::bench {

actors::runtime_config node_config(const options& opt) {
  actors::runtime_config cfg;
  // The load generator is only a node: every orphan re-parented to it is
  // its own.
  cfg.reap_all_orphans = opt.reap_all_orphans;
  cfg.stop.grace = opt.grace;
  return cfg;
}

actors::session_config session_config_for(const options& opt,
                                          const std::string& name) {
  actors::session_config cfg;
  cfg.working_directory = opt.scratch + "/" + name;
  cfg.home_directory = opt.scratch + "/home";
  return cfg;
}

actors::blocking_session make_session(actors::basic_node& node,
                                      const options& opt,
                                      const std::string& name) {
  auto s = actors::blocking_session::create(node,
                                            session_config_for(opt, name));
  if (!s)
    throw std::runtime_error("cannot create session " + name + ": "
                             + s.error().message);
  return std::move(*s);
}

stop_receipt stop_session(actors::blocking_session& s) {
  auto receipt = s.stop();
  if (!receipt)
    throw std::runtime_error("stop failed: " + receipt.error().message);
  return *receipt;
}

double percentile(std::vector<double> xs, double q) {
  if (xs.empty())
    return std::numeric_limits<double>::quiet_NaN();
  std::sort(xs.begin(), xs.end());
  auto n = static_cast<double>(xs.size());
  auto rank = static_cast<size_t>(std::ceil(q * n));
  rank = std::clamp<size_t>(rank, 1, xs.size());
  return xs[rank - 1];
}

uint64_t heap_in_use() {
  auto info = ::mallinfo2();
  return static_cast<uint64_t>(info.uordblks)
         + static_cast<uint64_t>(info.hblkhd);
}

cpu_time cpu_now() {
  auto secs = [](const rusage& u) {
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec)
           + static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  rusage self{};
  rusage children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  return {secs(self), secs(children),
          static_cast<double>(self.ru_nvcsw + self.ru_nivcsw)};
}

struct peak_meter::impl {
  uint64_t base = 0;
  bool reset_ok = false;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> sampled{0};
  std::thread sampler;
};

peak_meter::peak_meter() : impl_(new impl) {
  impl_->base = resident_bytes();
  // Writing "5" to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
  if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    impl_->reset_ok = std::fputs("5", f) >= 0;
    impl_->reset_ok = std::fclose(f) == 0 && impl_->reset_ok;
  }
  impl_->sampled = impl_->base;
  impl_->sampler = std::thread{[p = impl_] {
    while (!p->done.load()) {
      auto now = resident_bytes();
      if (now > p->sampled.load())
        p->sampled = now;
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
  }};
}

peak_meter::~peak_meter() {
  growth();
  delete impl_;
}

uint64_t peak_meter::growth() {
  if (!impl_->done.exchange(true))
    impl_->sampler.join();
  auto peak = impl_->sampled.load();
  if (impl_->reset_ok)
    peak = std::max(peak, peak_resident_bytes());
  return peak > impl_->base ? peak - impl_->base : 0;
}

pid_t raw_spawn(const std::vector<std::string>& argv, int stdout_fd,
                bool own_group) {
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  if (stdout_fd >= 0)
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  if (own_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  }
  pid_t pid = -1;
  auto rc = ::posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

int raw_wait(pid_t pid) {
  int status = 0;
  for (;;) {
    auto rc = ::waitpid(pid, &status, 0);
    if (rc == pid)
      return status;
    if (rc < 0 && errno != EINTR)
      return -1;
  }
}

bool make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  return !ec && std::filesystem::is_directory(path, ec);
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string sh_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

} // namespace sandbox::bench
