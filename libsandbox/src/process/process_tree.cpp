#include "sandbox/process/process_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "sandbox/unique_fd.hpp"

namespace sandbox {

bool parse_proc_stat(std::string_view text, proc_stat& out) {
  auto close = text.rfind(')');
  if (close == std::string_view::npos || close + 2 >= text.size())
    return false;
  // Past ") ": field 3 (state), then space-separated numbers, read in place.
  const char* p = text.data() + close + 2;
  const char* last = text.data() + text.size();
  out.state = *p++;
  auto next = [&](auto& value) {
    while (p < last && *p == ' ')
      ++p;
    auto [end, ec] = std::from_chars(p, last, value);
    p = end;
    return ec == std::errc{};
  };
  long long ppid = 0;
  long long pgid = 0;
  if (!next(ppid) || !next(pgid))
    return false;
  out.ppid = static_cast<pid_t>(ppid);
  out.pgid = static_cast<pid_t>(pgid);
  // Fields 6 to 21 (some may be negative), then the start time.
  for (int field = 6; field < 22; ++field)
    if (long long skipped = 0; !next(skipped))
      return false;
  unsigned long long start = 0;
  if (!next(start))
    return false;
  out.start_time = start;
  return true;
}

namespace {

/// The text of `path`, read until its end, or in one read (`once`).
bool read_text(const std::string& path, std::string& out, bool once) {
  unique_fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (!fd)
    return false;
  out.clear();
  char buf[4096];
  for (;;) {
    auto n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    out.append(buf, static_cast<size_t>(n));
    if (n == 0 || once)
      return true;
  }
}

} // namespace

bool read_small_file(const std::string& path, std::string& out) {
  return read_text(path, out, false);
}

bool read_cgroup_file(const std::string& path, std::string& out) {
  return read_text(path, out, true);
}

bool read_cgroup_file(int fd, const std::string& path, std::string& out) {
  if (fd >= 0) {
    char buf[4096];
    ssize_t n;
    do
      n = ::pread(fd, buf, sizeof(buf), 0);
    while (n < 0 && errno == EINTR);
    if (n >= 0) {
      out.assign(buf, static_cast<size_t>(n));
      return true;
    }
  }
  return read_cgroup_file(path, out);
}

std::vector<proc_entry> proc_snapshot() {
  std::vector<proc_entry> result;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr)
    return result;
  std::string text;
  char path[64];
  while (auto* ent = ::readdir(dir)) {
    if (ent->d_name[0] < '0' || ent->d_name[0] > '9')
      continue;
    proc_entry e;
    e.pid = static_cast<pid_t>(std::atoi(ent->d_name));
    std::snprintf(path, sizeof(path), "/proc/%d/stat", e.pid);
    proc_stat st;
    if (read_small_file(path, text) && parse_proc_stat(text, st)) {
      e.state = st.state;
      e.ppid = st.ppid;
      e.pgid = st.pgid;
      result.push_back(e);
    }
  }
  ::closedir(dir);
  return result;
}

bool environ_has_prefix(pid_t pid, std::string_view prefix) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/environ", pid);
  std::string text;
  if (!read_small_file(path, text))
    return false;
  size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\0', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string_view entry{text.data() + pos, end - pos};
    if (entry.substr(0, prefix.size()) == prefix)
      return true;
    pos = end + 1;
  }
  return false;
}

tree_query executions_query(const std::vector<pid_t>& children,
                            const std::vector<pid_t>& groups,
                            std::string marker_prefix) {
  tree_query q;
  q.groups = groups;
  q.groups.insert(q.groups.end(), children.begin(), children.end());
  std::sort(q.groups.begin(), q.groups.end());
  q.groups.erase(std::unique(q.groups.begin(), q.groups.end()), q.groups.end());
  q.roots = children;
  q.marker_prefix = std::move(marker_prefix);
  return q;
}

std::vector<pid_t> find_members(const tree_query& q) {
  return find_members(q, proc_snapshot());
}

std::vector<pid_t> find_members(const tree_query& q,
                                const std::vector<proc_entry>& snapshot) {
  auto self = ::getpid();
  std::unordered_set<pid_t> groups(q.groups.begin(), q.groups.end());
  std::unordered_set<pid_t> members;
  std::unordered_map<pid_t, pid_t> parent;
  for (auto& e : snapshot)
    parent.emplace(e.pid, e.ppid);
  std::unordered_set<pid_t> roots(q.roots.begin(), q.roots.end());
  auto descends_from_root = [&](pid_t pid) {
    // Bounded walk: a pid chain cannot be longer than the snapshot.
    for (size_t i = 0; i <= snapshot.size() && pid > 1; ++i) {
      if (roots.count(pid) > 0)
        return true;
      auto it = parent.find(pid);
      if (it == parent.end())
        return false;
      pid = it->second;
    }
    return false;
  };
  for (auto& e : snapshot) {
    if (e.pid == self || e.zombie())
      continue;
    if (groups.count(e.pgid) > 0 || descends_from_root(e.pid)
        || (!q.marker_prefix.empty()
            && environ_has_prefix(e.pid, q.marker_prefix)))
      members.insert(e.pid);
  }
  std::vector<pid_t> result(members.begin(), members.end());
  std::sort(result.begin(), result.end());
  return result;
}

} // namespace sandbox
