#include "contain/view_walk.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <vector>

#include <fmt/format.h>

#include "sandbox/unique_fd.hpp"

namespace sandbox::detail {

namespace {

/// Puts the components of `path` in front of `todo`; false when that
/// passes `limit` components taken in all (`taken` counts them).
bool push_components(std::deque<std::string>& todo, std::string_view path,
                     size_t& taken, size_t limit) {
  std::vector<std::string> parts;
  while (!path.empty()) {
    auto pos = path.find('/');
    auto part = path.substr(0, pos);
    if (!part.empty()) {
      if (++taken > limit)
        return false;
      parts.emplace_back(part);
    }
    if (pos == std::string_view::npos)
      break;
    path.remove_prefix(pos + 1);
  }
  todo.insert(todo.begin(), parts.begin(), parts.end());
  return true;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (auto& n : names)
    out += "/" + n;
  return out.empty() ? std::string{"/"} : out;
}

} // namespace

view_walk walk_view(int root, std::string_view path, bool follow_last,
                    walk_limits limits) {
  view_walk w;
  std::deque<std::string> todo;
  size_t taken = 0;
  if (!push_components(todo, path, taken, limits.components)) {
    w.status = view_walk::too_long;
    return w;
  }
  // `names` is the path so far; `cur` is open on its first `open_depth`
  // names (all of them unless one did not exist: from there on the walk
  // is lexical).
  std::vector<std::string> names;
  unique_fd cur;
  size_t open_depth = 0;
  auto at = [&] { return cur ? cur.get() : root; };
  int links = 0;
  while (!todo.empty()) {
    auto part = std::move(todo.front());
    todo.pop_front();
    if (part == ".")
      continue;
    if (part == "..") {
      if (names.empty())
        continue;
      names.pop_back();
      if (names.size() < open_depth) {
        // What was opened is a directory, not a link: its parent in the
        // view, and the root's parent is the root.
        --open_depth;
        if (open_depth == 0) {
          cur.reset();
        } else {
          ++w.steps;
          unique_fd up{::openat(at(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC)};
          if (!up) {
            w.status = view_walk::no_root;
            return w;
          }
          cur = std::move(up);
        }
      }
      continue;
    }
    names.push_back(part);
    if (names.size() - 1 > open_depth || (todo.empty() && !follow_last))
      continue;
    ++w.steps;
    unique_fd fd{::openat(at(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC)};
    struct stat st;
    if (!fd || ::fstat(fd.get(), &st) != 0)
      continue; // does not exist (or cannot be seen): taken as it is
    if (!S_ISLNK(st.st_mode)) {
      cur = std::move(fd);
      open_depth = names.size();
      continue;
    }
    if (++links > limits.links) {
      w.status = view_walk::too_many_links;
      return w;
    }
    char target[PATH_MAX];
    auto n = ::readlinkat(fd.get(), "", target, sizeof(target));
    if (n <= 0)
      continue; // unreadable: taken as it is, lexically from here

    names.pop_back();
    if (target[0] == '/') {
      names.clear();
      cur.reset();
      open_depth = 0;
    }
    if (!push_components(todo, {target, static_cast<size_t>(n)}, taken,
                         limits.components)) {
      w.status = view_walk::too_long;
      return w;
    }
  }
  w.path = joined(names);
  return w;
}

view_walk walk_view_of(int pid, std::string_view path, bool follow_last,
                       walk_limits limits) {
  auto root = fmt::format("/proc/{}/root", pid);
  unique_fd fd{::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
  if (!fd) {
    view_walk w;
    w.status = view_walk::no_root;
    return w;
  }
  return walk_view(fd.get(), path, follow_last, limits);
}

} // namespace sandbox::detail
