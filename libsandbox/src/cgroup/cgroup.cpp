#include "sandbox/cgroup/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "sandbox/process/process_tree.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

namespace {

/// mountinfo escapes blanks and backslashes as `\ooo`.
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3'
        && s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0'
        && s[i + 3] <= '7') {
      out.push_back(static_cast<char>(
        (s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::string_view> split(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= line.size()) {
    auto end = line.find(sep, pos);
    if (end == std::string_view::npos)
      end = line.size();
    out.push_back(line.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

error unsupported(std::string why) {
  return error{errc::unsupported,
               fmt::format("cgroup v2 containment unavailable: {}", why)};
}

/// Field 22 of /proc/<pid>/stat: start time in clock ticks after boot.
/// With the pid it names a process uniquely across pid reuse. 0 when the
/// process is gone.
unsigned long long start_time_of(const std::string& stat_path) {
  std::string text;
  proc_stat st;
  if (!read_small_file(stat_path, text) || !parse_proc_stat(text, st))
    return 0;
  return st.start_time;
}

unsigned long long own_start_time() {
  return start_time_of("/proc/self/stat");
}

bool valid_component(std::string_view name) {
  return !name.empty() && name != "." && name != ".."
         && name.find('/') == std::string_view::npos
         && name.find('\0') == std::string_view::npos;
}

/// Child cgroups of `dir` (subdirectories).
std::vector<std::string> children_of(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr)
    return out;
  while (auto* ent = ::readdir(d)) {
    if (ent->d_type != DT_DIR || std::strcmp(ent->d_name, ".") == 0
        || std::strcmp(ent->d_name, "..") == 0)
      continue;
    out.push_back(dir + "/" + ent->d_name);
  }
  ::closedir(d);
  return out;
}

void collect_members(const std::string& dir, std::vector<pid_t>& out,
                     int depth) {
  std::string text;
  if (read_small_file(dir + "/cgroup.procs", text)) {
    for (auto line : split(text, '\n'))
      if (!line.empty())
        out.push_back(static_cast<pid_t>(std::atoi(std::string{line}.c_str())));
  }
  // Our trees are two levels deep; the bound only stops a runaway walk.
  if (depth < 16)
    for (auto& child : children_of(dir))
      collect_members(child, out, depth + 1);
}

} // namespace

std::string_view to_string(containment_mode x) noexcept {
  switch (x) {
    case containment_mode::cgroup:
      return "cgroup";
    case containment_mode::process_group:
      return "process_group";
  }
  return "unknown";
}

namespace {

/// The directory of this process's cgroup in the hierarchy mounted with
/// file system type `fstype` whose super options hold `controller` (any,
/// when empty), given the path `own` from /proc/self/cgroup.
result<std::string>
mounted_cgroup(std::string_view mountinfo, const std::string& own,
               std::string_view fstype, std::string_view controller,
               std::string_view what) {
  // A cgroup whose processes moved away after we were born into it shows
  // " (deleted)"; nothing can be created below it.
  if (own.empty() || own.front() != '/')
    return unsupported(fmt::format("unusable own cgroup {}", own));
  bool mounted = false;
  for (auto line : split(mountinfo, '\n')) {
    // id parent major:minor root mount-point options [optional...] - type
    // source super-options
    auto dash = line.find(" - ");
    if (dash == std::string_view::npos)
      continue;
    auto tail = split(line.substr(dash + 3), ' ');
    if (tail.empty() || tail[0] != fstype)
      continue;
    if (!controller.empty()) {
      if (tail.size() < 3)
        continue;
      auto opts = split(tail[2], ',');
      if (std::find(opts.begin(), opts.end(), controller) == opts.end())
        continue;
    }
    mounted = true;
    auto head = split(line.substr(0, dash), ' ');
    if (head.size() < 5)
      continue;
    auto root = unescape_octal(head[3]);
    auto point = unescape_octal(head[4]);
    // The own cgroup is relative to the cgroup namespace, as the mount's
    // root is: the mount shows it when the root is a prefix of it.
    std::string rel;
    if (root == "/")
      rel = own;
    else if (own == root)
      rel = "/";
    else if (own.compare(0, root.size(), root) == 0 && own.size() > root.size()
             && own[root.size()] == '/')
      rel = own.substr(root.size());
    else
      continue;
    if (rel == "/")
      return point;
    return point + rel;
  }
  if (!mounted)
    return unsupported(fmt::format("no {} file system in "
                                   "/proc/self/mountinfo",
                                   what));
  return unsupported(
    fmt::format("own cgroup {} is not below any {} mount", own, what));
}

} // namespace

std::optional<std::string> cgroup_v2_entry(std::string_view proc_cgroup) {
  std::optional<std::string> out;
  for (auto line : split(proc_cgroup, '\n'))
    if (line.substr(0, 3) == "0::")
      out = std::string{line.substr(3)};
  return out;
}

result<std::string> find_own_cgroup(std::string_view mountinfo,
                                    std::string_view proc_cgroup) {
  auto own = cgroup_v2_entry(proc_cgroup);
  if (!own)
    return unsupported("no cgroup v2 entry (0::) in /proc/self/cgroup");
  return mounted_cgroup(mountinfo, *own, "cgroup2", {}, "cgroup2");
}

result<std::string> find_own_cgroup_v1(std::string_view mountinfo,
                                       std::string_view proc_cgroup,
                                       std::string_view controller) {
  // hierarchy-id:controller,controller:path
  for (auto line : split(proc_cgroup, '\n')) {
    auto parts = split(line, ':');
    if (parts.size() < 3 || parts[1].empty())
      continue;
    auto names = split(parts[1], ',');
    if (std::find(names.begin(), names.end(), controller) == names.end())
      continue;
    auto colon = line.find(':', line.find(':') + 1);
    return mounted_cgroup(mountinfo, std::string{line.substr(colon + 1)},
                          "cgroup", controller,
                          fmt::format("cgroup v1 {}", controller));
  }
  return unsupported(
    fmt::format("no cgroup v1 {} entry in /proc/self/cgroup", controller));
}

result<std::string> find_own_cgroup() {
  std::string mountinfo;
  std::string cgroup;
  if (!read_small_file("/proc/self/mountinfo", mountinfo))
    return unsupported(fmt::format("cannot read /proc/self/mountinfo: {}",
                                   std::strerror(errno)));
  if (!read_small_file("/proc/self/cgroup", cgroup))
    return unsupported(
      fmt::format("cannot read /proc/self/cgroup: {}", std::strerror(errno)));
  return find_own_cgroup(mountinfo, cgroup);
}

result<std::string> find_own_cgroup_v1(std::string_view controller) {
  std::string mountinfo;
  std::string cgroup;
  if (!read_small_file("/proc/self/mountinfo", mountinfo)
      || !read_small_file("/proc/self/cgroup", cgroup))
    return unsupported(
      fmt::format("cannot read /proc/self: {}", std::strerror(errno)));
  return find_own_cgroup_v1(mountinfo, cgroup, controller);
}

std::vector<pid_t> cgroup_members(const std::string& dir) {
  std::vector<pid_t> out;
  collect_members(dir, out, 0);
  return out;
}

namespace {

/// `populated` of the text of `path` (a `cgroup.events`).
result<bool> populated_in(std::string_view text, const std::string& path) {
  for (auto line : split(text, '\n'))
    if (line.substr(0, 10) == "populated ")
      return line.substr(10) != "0";
  return error{errc::io_error, fmt::format("{}: no populated line", path)};
}

} // namespace

result<bool> cgroup_populated(const std::string& dir) {
  std::string text;
  auto path = dir + "/cgroup.events";
  if (!read_cgroup_file(path, text))
    return make_errno_error(errno, path);
  return populated_in(text, path);
}

size_t held_cgroup_budget::default_size() noexcept {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0)
    return 0;
  return static_cast<size_t>(std::min<rlim_t>(lim.rlim_cur / 8, 1024));
}

bool held_cgroup_budget::take(size_t n) noexcept {
  auto want = static_cast<int64_t>(n);
  auto left = left_.load(std::memory_order_relaxed);
  while (left >= want)
    if (left_.compare_exchange_weak(left, left - want,
                                    std::memory_order_relaxed))
      return true;
  return false;
}

void held_cgroup_budget::give(size_t n) noexcept {
  left_.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
}

result<std::shared_ptr<const held_cgroup>>
held_cgroup::open(std::string dir, std::shared_ptr<held_cgroup_budget> budget) {
  std::shared_ptr<held_cgroup> out{new held_cgroup(std::move(dir))};
  if (budget && !budget->take(2))
    return out;
  auto& path = out->path_;
  out->dir_.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (out->dir_)
    out->events_.reset(
      ::openat(out->dir_.get(), "cgroup.events", O_RDONLY | O_CLOEXEC));
  if (!out->events_) {
    auto err = errno;
    if (budget)
      budget->give(2);
    return make_errno_error(err, out->dir_ ? out->events_path_
                                           : fmt::format("cgroup {}", path));
  }
  out->budget_ = std::move(budget);
  return out;
}

held_cgroup::~held_cgroup() {
  if (budget_)
    budget_->give(2);
}

result<bool> held_cgroup::populated() const {
  // This runs at every execution's end, when its cgroup goes back to the
  // pool: one read.
  std::string text;
  if (!read_cgroup_file(events_.get(), events_path_, text))
    return make_errno_error(errno, events_path_);
  return populated_in(text, events_path_);
}

result<void> cgroup_kill(const std::string& dir) {
  auto path = dir + "/cgroup.kill";
  unique_fd fd{::open(path.c_str(), O_WRONLY | O_CLOEXEC)};
  if (!fd || ::write(fd.get(), "1", 1) != 1)
    return make_errno_error(errno, path);
  return {};
}

result<void> cgroup_remove(const std::string& dir) {
  for (auto& child : children_of(dir))
    if (auto ok = cgroup_remove(child); !ok)
      return ok;
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT)
    return make_errno_error(errno, fmt::format("rmdir {}", dir));
  return {};
}

result<void> cgroup_kill_and_remove(const std::string& dir,
                                    std::chrono::milliseconds timeout) {
  auto populated = cgroup_populated(dir);
  if (!populated) {
    if (populated.error().code == errc::path_not_found)
      return {};
    return populated.error();
  }
  if (*populated) {
    if (auto ok = cgroup_kill(dir); !ok)
      return ok;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      populated = cgroup_populated(dir);
      if (!populated)
        return populated.error();
      if (!*populated)
        break;
      if (std::chrono::steady_clock::now() >= deadline)
        return error{errc::timeout,
                     fmt::format("cgroup {} still holds processes {} ms "
                                 "after cgroup.kill",
                                 dir, timeout.count())};
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
  }
  return cgroup_remove(dir);
}

namespace {

/// Numbers the trees of this process.
std::atomic<uint64_t> next_tree{0};

/// Removes `dir` if it is empty; true when it is gone.
bool remove_if_empty(const std::string& dir) {
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

} // namespace

std::shared_ptr<const held_cgroup> cgroup_pool::take() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (idle_.empty())
    return nullptr;
  auto dir = std::move(idle_.back());
  idle_.pop_back();
  return dir;
}

void cgroup_pool::give_back(std::shared_ptr<const held_cgroup> dir) {
  // Nothing can enter an empty cgroup but by an explicit move, which no
  // process of the session may make (the directory is the node's): empty
  // now, it stays empty until the next execution is born in it.
  if (!dir)
    return;
  auto populated = dir->populated();
  if (!populated || *populated)
    return;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!closed_ && idle_.size() < cap_) {
      idle_.push_back(std::move(dir));
      return;
    }
  }
  (void) remove_if_empty(dir->path());
}

void cgroup_pool::close() {
  std::lock_guard<std::mutex> guard{mtx_};
  closed_ = true;
  idle_.clear();
}

size_t cgroup_pool::idle() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return idle_.size();
}

size_t remove_dead_cgroups(const std::string& own) {
  size_t removed = 0;
  for (auto& dir : children_of(own)) {
    auto name = dir.substr(dir.rfind('/') + 1);
    unsigned long pid = 0;
    unsigned long long start = 0;
    char tail = 0;
    if (std::sscanf(name.c_str(), "sandbox-%lu-%llu%c", &pid, &start, &tail)
          != 2
        || pid == 0)
      continue;
    if (static_cast<pid_t>(pid) == ::getpid())
      continue;
    // Gone: no such pid, or the pid is another process's now (another
    // start time). A process whose start time cannot be read is left alone.
    auto now = start_time_of(fmt::format("/proc/{}/stat", pid));
    auto gone = now == 0
                  ? ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH
                  : now != start;
    if (!gone)
      continue;
    if (cgroup_kill_and_remove(dir, std::chrono::seconds{2}))
      ++removed;
  }
  return removed;
}

result<std::unique_ptr<cgroup_tree>> cgroup_tree::create() {
  auto own = find_own_cgroup();
  if (!own)
    return own.error();
  auto process = fmt::format("{}/sandbox-{}-{}", *own, ::getpid(),
                             own_start_time());
  auto root = fmt::format("{}/n-{}", process, ++next_tree);
  // The check makes both directories and removes them again: they exist
  // only while an execution needs them (`make_execution`), so a node that
  // ends without its destructor (the CLI's _Exit) leaves nothing behind
  // once its sessions stopped.
  if (::mkdir(process.c_str(), 0755) != 0 && errno != EEXIST)
    return unsupported(
      fmt::format("cannot create {}: {}", process, std::strerror(errno)));
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) {
    auto err = errno;
    remove_if_empty(process);
    return unsupported(
      fmt::format("cannot create {}: {}", root, std::strerror(err)));
  }
  // cgroup.kill came with Linux 5.14 (CLONE_INTO_CGROUP with 5.7).
  auto kill_ok = ::access((root + "/cgroup.kill").c_str(), W_OK) == 0;
  auto err = errno;
  remove_if_empty(root);
  remove_if_empty(process);
  if (!kill_ok)
    return unsupported(
      fmt::format("{}/cgroup.kill: {}", root, std::strerror(err)));
  return std::unique_ptr<cgroup_tree>{
    new cgroup_tree(std::move(*own), std::move(process), std::move(root))};
}

cgroup_tree::~cgroup_tree() {
  (void) cgroup_kill_and_remove(root_, std::chrono::seconds{2});
  remove_if_empty(process_);
}

void cgroup_tree::prune(const std::string& session_dir) {
  auto slash = session_dir.rfind('/');
  if (slash == std::string::npos
      || session_dir.compare(slash + 1, 2, "s-") != 0)
    return;
  auto root = session_dir.substr(0, slash);
  slash = root.rfind('/');
  if (slash == std::string::npos || root.compare(slash + 1, 2, "n-") != 0)
    return;
  if (remove_if_empty(root)) {
    auto process = root.substr(0, slash);
    slash = process.rfind('/');
    if (slash != std::string::npos
        && process.compare(slash + 1, 8, "sandbox-") == 0)
      remove_if_empty(process);
  }
}

std::string cgroup_tree::session_path(std::string_view id) const {
  return fmt::format("{}/s-{}", root_, id);
}

result<std::string> cgroup_tree::make_execution(std::string_view id,
                                                uint64_t exec) const {
  if (!valid_component(id))
    return error{errc::invalid_argument,
                 fmt::format("session id {} is not a cgroup name", id)};
  auto session = session_path(id);
  auto path = fmt::format("{}/e-{}", session, exec);
  // One mkdir in the common case. A missing ancestor is made again: an
  // idle node's directories go with its last session (`prune`), possibly
  // while this runs, hence the few rounds.
  for (int round = 0; round < 4; ++round) {
    if (::mkdir(path.c_str(), 0755) == 0)
      return path;
    if (errno != ENOENT)
      break;
    for (const char* dir : {process_.c_str(), root_.c_str(), session.c_str()})
      if (::mkdir(dir, 0755) != 0 && errno != EEXIST)
        break;
  }
  return make_errno_error(errno, fmt::format("mkdir {}", path));
}

} // namespace sandbox
