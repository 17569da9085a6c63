// session_limits and apply_cgroup_limits
// (sandbox/contain/contained_session.hpp): the memory and process limits of a
// contained session, on cgroup v2 or v1.
#include "sandbox/contain/contained_session.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/paths.hpp"
#include "sandbox/log.hpp"
#include "sandbox/process/process_tree.hpp"

namespace sandbox {

using detail::inside;

namespace {

/// The number after `key` at the start of a line of `text` (0: none).
uint64_t counter_in(const std::string& text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string_view line{text.data() + pos, end - pos};
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0
        && line[key.size()] == ' ')
      return std::strtoull(std::string{line.substr(key.size() + 1)}.c_str(),
                           nullptr, 10);
    pos = end + 1;
  }
  return 0;
}

} // namespace

result<std::shared_ptr<session_limits>>
session_limits::make(const isolation_limits& limits,
                     const std::string& v2_enable_from,
                     const std::string& v2_dir, const std::string& session_id) {
  std::shared_ptr<session_limits> out{new session_limits};
  out->limits_ = limits;
  auto& host = host_isolation();
  // What v2 gives goes on the session's cgroup.
  isolation_limits on_v2;
  std::vector<std::pair<const char*, std::string>> on_v1;
  for (auto [ctl, value] : {std::pair{"memory", limits.memory},
                            std::pair{"pids", limits.processes}}) {
    if (value == 0)
      continue;
    bool v2 = !v2_dir.empty()
              && std::find(host.cgroup_controllers.begin(),
                           host.cgroup_controllers.end(), ctl)
                   != host.cgroup_controllers.end();
    if (v2) {
      (ctl == std::string_view{"memory"} ? on_v2.memory : on_v2.processes)
        = value;
      (ctl == std::string_view{"memory"} ? out->memory_events_
                                         : out->pids_events_)
        = v2_dir
          + (ctl == std::string_view{"memory"} ? "/memory.events"
                                               : "/pids.events");
      continue;
    }
    auto base = host.v1_directory(ctl);
    if (base.empty())
      return error{errc::unsupported,
                   fmt::format("the cgroup {} controller, v2 or v1", ctl)};
    on_v1.emplace_back(ctl, base);
  }
  if (auto ok = apply_cgroup_limits(v2_enable_from, v2_dir, on_v2); !ok)
    return ok.error();
  for (auto& [ctl, base] : on_v1) {
    bool memory = ctl == std::string_view{"memory"};
    auto dir = fmt::format("{}/sandbox-{}", base, session_id);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      return error{errc::io_error, fmt::format("cannot make cgroup {}: {}", dir,
                                               std::strerror(errno))};
    out->v1_dirs_.push_back(dir);
    auto value = std::to_string(memory ? limits.memory : limits.processes);
    auto file = dir + (memory ? "/memory.limit_in_bytes" : "/pids.max");
    unique_fd fd{::open(file.c_str(), O_WRONLY | O_CLOEXEC)};
    if (!fd || ::write(fd.get(), value.data(), value.size()) < 0)
      return error{errc::io_error,
                   fmt::format("cannot write {} to {}: {}", value, file,
                               std::strerror(errno))};
    // `tasks`, not `cgroup.procs`: the joining child is a process of one
    // thread, and the kernel moves a thread that writes "0" to `tasks`
    // without the global write lock a process move takes (which waits for
    // an RCU grace period and stalls every fork on the machine meanwhile).
    auto procs = dir + "/tasks";
    unique_fd join{::open(procs.c_str(), O_WRONLY | O_CLOEXEC)};
    if (!join)
      return error{errc::io_error, fmt::format("cannot open {}: {}", procs,
                                               std::strerror(errno))};
    out->join_.push_back(std::move(join));
    (memory ? out->memory_events_ : out->pids_events_)
      = dir + (memory ? "/memory.oom_control" : "/pids.events");
  }
  for (auto [path, fd] :
       {std::pair{&out->memory_events_, &out->memory_events_fd_},
        std::pair{&out->pids_events_, &out->pids_events_fd_}})
    if (!path->empty())
      fd->reset(::open(path->c_str(), O_RDONLY | O_CLOEXEC));
  return out;
}

session_limits::~session_limits() {
  // Nothing of the session runs any more (the init was reaped): the v1
  // directories are empty.
  join_.clear();
  memory_events_fd_.reset();
  pids_events_fd_.reset();
  for (auto it = v1_dirs_.rbegin(); it != v1_dirs_.rend(); ++it)
    if (::rmdir(it->c_str()) != 0 && errno != ENOENT)
      log::logger()->warn("cannot remove cgroup {}: {}", *it,
                          std::strerror(errno));
}

namespace {} // namespace

session_limits::counters session_limits::read() const {
  counters c;
  std::string text;
  if (!memory_events_.empty()
      && read_cgroup_file(memory_events_fd_.get(), memory_events_, text))
    c.oom_kills = counter_in(text, "oom_kill");
  if (!pids_events_.empty()
      && read_cgroup_file(pids_events_fd_.get(), pids_events_, text))
    c.forks_refused = counter_in(text, "max");
  return c;
}

std::vector<int> session_limits::join_fds() const {
  std::vector<int> out;
  for (auto& fd : join_)
    out.push_back(fd.get());
  return out;
}

result<void> apply_cgroup_limits(const std::string& enable_from,
                                 const std::string& dir,
                                 const isolation_limits& limits) {
  std::vector<std::pair<std::string, uint64_t>> wanted;
  if (limits.memory > 0)
    wanted.emplace_back("memory", limits.memory);
  if (limits.processes > 0)
    wanted.emplace_back("pids", limits.processes);
  if (wanted.empty())
    return {};
  if (!inside(dir, enable_from) || dir == enable_from)
    return error{errc::invalid_argument,
                 fmt::format("cgroup {} is not below {}", dir, enable_from)};
  auto write = [](const std::string& path,
                  const std::string& text) -> result<void> {
    unique_fd fd{::open(path.c_str(), O_WRONLY | O_CLOEXEC)};
    if (!fd || ::write(fd.get(), text.data(), text.size()) < 0)
      return error{errc::io_error,
                   fmt::format("cannot write {:?} to {}: {}", text, path,
                               std::strerror(errno))};
    return {};
  };
  // Each directory from `enable_from` down to the parent of `dir` hands
  // the controllers to its children.
  std::string at = enable_from;
  while (at != dir) {
    for (auto& [ctl, value] : wanted)
      if (auto ok = write(at + "/cgroup.subtree_control", "+" + ctl); !ok)
        return error{errc::unsupported,
                     fmt::format("the cgroup v2 {} controller: {}", ctl,
                                 ok.error().message)};
    auto next = dir.find('/', at.size() + 1);
    at = next == std::string::npos ? dir : dir.substr(0, next);
  }
  for (auto& [ctl, value] : wanted)
    if (auto ok = write(dir + (ctl == "memory" ? "/memory.max" : "/pids.max"),
                        std::to_string(value));
        !ok)
      return ok.error();
  return {};
}

} // namespace sandbox
