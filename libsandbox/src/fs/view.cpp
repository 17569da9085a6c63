#include "sandbox/fs/view.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <deque>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "sandbox/fs/path_resolver.hpp"

namespace sandbox::fs {

namespace {

/// As many symlinks as the kernel follows in one path (MAXSYMLINKS).
constexpr int max_links = 40;

/// Whether `path` is `dir` or lies below it.
bool inside(std::string_view path, std::string_view dir) {
  if (dir == "/")
    return true;
  return path == dir
         || (path.size() > dir.size() && path.substr(0, dir.size()) == dir
             && path[dir.size()] == '/');
}

std::string proc_fd(int fd) {
  return fmt::format("/proc/self/fd/{}", fd);
}

void replace_all(std::string& s, const std::string& from,
                 const std::string& to) {
  if (from.empty())
    return;
  for (size_t at = s.find(from); at != std::string::npos;
       at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

} // namespace

/// Directories opened from the root down, by name, with `O_PATH`
/// descriptors; what lies below them and was not found (or could not be
/// entered), and why. Not in the anonymous namespace: `session_view::resolved`
/// holds one.
struct walk_result {
  std::vector<std::string> names;
  std::vector<unique_fd> fds;
  std::vector<std::string> rest;
  int err = 0;

  /// The path of what was opened, `/`-joined.
  std::string opened() const {
    std::string s;
    for (auto& n : names)
      s += "/" + n;
    return s.empty() ? std::string{"/"} : s;
  }

  /// The whole path as far as it is known: what was opened, then the rest
  /// lexically.
  std::string canonical() const {
    std::string rest_path;
    for (auto& r : rest)
      rest_path += (rest_path.empty() ? "" : "/") + r;
    return resolve(opened(), rest_path);
  }
};

namespace {

void push_components(std::deque<std::string>& todo, std::string_view path) {
  std::vector<std::string> parts;
  while (!path.empty()) {
    auto pos = path.find('/');
    auto part = path.substr(0, pos);
    if (!part.empty() && part != ".")
      parts.emplace_back(part);
    path = pos == std::string_view::npos ? std::string_view{}
                                         : path.substr(pos + 1);
  }
  todo.insert(todo.begin(), parts.begin(), parts.end());
}

/// Resolves `path` from `root` one component at a time with `O_PATH |
/// O_NOFOLLOW`, following every symlink by hand inside the root. Stops at
/// the first component that cannot be opened (`err`, `rest`).
walk_result walk(int root, std::string_view path) {
  walk_result w;
  std::deque<std::string> todo;
  push_components(todo, path);
  int links = 0;
  auto stop = [&](int err, std::string comp) {
    w.err = err;
    w.rest.push_back(std::move(comp));
    w.rest.insert(w.rest.end(), todo.begin(), todo.end());
  };
  while (!todo.empty()) {
    auto comp = std::move(todo.front());
    todo.pop_front();
    if (comp == "..") {
      // Lexical over what was opened: every opened name is a directory,
      // not a symlink, so this is the directory's parent in the view (and
      // the root's parent is the root).
      if (!w.names.empty()) {
        w.names.pop_back();
        w.fds.pop_back();
      }
      continue;
    }
    int cur = w.fds.empty() ? root : w.fds.back().get();
    unique_fd fd{::openat(cur, comp.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC)};
    struct ::stat st;
    if (!fd || ::fstat(fd.get(), &st) != 0) {
      stop(errno, std::move(comp));
      return w;
    }
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX + 1];
      auto n = ::readlinkat(fd.get(), "", target, PATH_MAX);
      if (n < 0 || ++links > max_links) {
        stop(n < 0 ? errno : ELOOP, std::move(comp));
        return w;
      }
      std::string_view t{target, static_cast<size_t>(n)};
      if (t.empty()) {
        stop(ENOENT, std::move(comp));
        return w;
      }
      if (t.front() == '/') {
        w.names.clear();
        w.fds.clear();
      }
      push_components(todo, t);
      continue;
    }
    if (!todo.empty() && !S_ISDIR(st.st_mode)) {
      stop(ENOTDIR, std::move(comp));
      return w;
    }
    w.names.push_back(std::move(comp));
    w.fds.push_back(std::move(fd));
  }
  return w;
}

} // namespace

/// A path resolved for one operation: `host` is what the wrapped function
/// gets (`/proc/self/fd/<n>`, `/proc/self/fd/<n>/<name>`), `shown` what
/// its messages should name instead.
struct session_view::resolved {
  walk_result w;
  std::string host;
  std::string shown;
  /// `/proc/self/fd/<n>` of the parent in the entry modes, and how to show
  /// it.
  std::string host_dir;
  std::string shown_dir;
  /// The object exists (object mode).
  bool exists = false;
  bool is_dir = false;

  error show(error e) const {
    replace_all(e.message, host, shown);
    replace_all(e.message, host_dir, shown_dir);
    return e;
  }
};

session_view::~session_view() = default;

result<std::shared_ptr<const session_view>>
session_view::open(const std::string& root, view_policy policy) {
  std::shared_ptr<session_view> v{new session_view};
  v->root_.reset(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!v->root_)
    return make_errno_error(errno, root);
  auto in_view = [&](std::string& path) {
    auto w = walk(v->root_.get(), path);
    if (w.err == 0)
      path = w.opened();
  };
  for (auto& p : policy.kept)
    in_view(p);
  for (auto& p : policy.writable)
    in_view(p);
  // The mounts covering denied paths sit where the host resolved them.
  for (auto& p : policy.deny)
    if (char* real = ::realpath(p.c_str(), nullptr)) {
      p = real;
      std::free(real);
    }
  v->policy_ = std::move(policy);
  return std::shared_ptr<const session_view>{std::move(v)};
}

bool session_view::denied(std::string_view path) const {
  for (auto& d : policy_.deny) {
    if (!inside(path, d))
      continue;
    bool kept = false;
    for (auto& k : policy_.kept)
      kept = kept || (inside(k, d) && inside(path, k));
    if (!kept)
      return true;
  }
  return false;
}

bool session_view::writable(std::string_view path) const {
  if (denied(path))
    return false;
  for (auto& w : policy_.writable)
    if (inside(path, w))
      return true;
  return false;
}

result<session_view::resolved>
session_view::resolve(const std::string& abs, std::string_view verb, mode m,
                      bool write, denial* refused) const {
  if (auto ok = validate_path(abs); !ok)
    return ok.error();
  auto refuse = [&](const std::string& canonical) -> error {
    if (refused != nullptr)
      *refused = denial{write ? denial::write_denied : denial::read_denied,
                        canonical};
    auto via = canonical == abs || canonical + "/" == abs
                 ? std::string{}
                 : fmt::format(" (it resolves to {})", canonical);
    if (write && !denied(canonical))
      return error{errc::permission_denied,
                   fmt::format("{} {}: permission denied: a contained "
                               "session changes files only below its "
                               "working directory, its home, /tmp and "
                               "/dev/shm{}",
                               verb, abs, via)};
    return error{errc::permission_denied,
                 fmt::format("{} {}: permission denied: the path is denied to "
                             "a contained session{}",
                             verb, abs, via)};
  };
  auto allowed = [&](const std::string& canonical) {
    return write ? writable(canonical) : !denied(canonical);
  };
  resolved r;
  auto dir_only = names_directory(abs) || abs == "/";
  auto slash = abs.rfind('/');
  if (m == mode::object || dir_only || slash == std::string::npos) {
    r.w = walk(root_.get(), abs);
    auto canonical = r.w.canonical();
    if (!allowed(canonical))
      return refuse(canonical);
    if (r.w.err != 0)
      return make_errno_error(r.w.err, fmt::format("{} {}", verb, abs));
    int fd = r.w.fds.empty() ? root_.get() : r.w.fds.back().get();
    struct ::stat st;
    if (::fstat(fd, &st) != 0)
      return make_errno_error(errno, fmt::format("{} {}", verb, abs));
    r.exists = true;
    r.is_dir = S_ISDIR(st.st_mode);
    if (dir_only && !r.is_dir)
      return make_errno_error(ENOTDIR, fmt::format("{} {}", verb, abs));
    r.host = proc_fd(fd) + (dir_only ? "/" : "");
    r.shown = abs;
    return r;
  }
  // The entry modes: the parent is resolved, the last name is not followed.
  auto dir = slash == 0 ? std::string{"/"} : abs.substr(0, slash);
  auto name = abs.substr(slash + 1);
  r.w = walk(root_.get(), dir);
  if (r.w.err == ENOENT && m == mode::make_parents) {
    // What is missing is made below: no symlink can be among it.
    auto rest = std::move(r.w.rest);
    r.w.rest.clear();
    for (auto& c : rest)
      if (c != ".." || r.w.rest.empty())
        r.w.rest.push_back(c);
      else
        r.w.rest.pop_back();
    // `..` climbing over what exists goes up what was opened.
    while (!r.w.rest.empty() && r.w.rest.front() == "..") {
      r.w.rest.erase(r.w.rest.begin());
      if (!r.w.names.empty()) {
        r.w.names.pop_back();
        r.w.fds.pop_back();
      }
    }
  }
  auto parent = r.w.canonical();
  auto canonical = fs::resolve(parent, name);
  if (!allowed(canonical))
    return refuse(canonical);
  if (r.w.err != 0 && !(r.w.err == ENOENT && m == mode::make_parents)) {
    if (m == mode::make_parents && r.w.err == ENOTDIR)
      return error{errc::path_not_found,
                   fmt::format("{} {}: a parent of it is not a directory", verb,
                               abs)};
    return make_errno_error(r.w.err, fmt::format("{} {}", verb, abs));
  }
  if (r.w.err != 0) {
    // mkdir -p, each new directory checked on its own.
    auto rest = std::move(r.w.rest);
    r.w.rest.clear();
    r.w.err = 0;
    for (auto& c : rest) {
      auto path = fs::resolve(r.w.opened(), c);
      if (!allowed(path))
        return refuse(path);
      int cur = r.w.fds.empty() ? root_.get() : r.w.fds.back().get();
      if (::mkdirat(cur, c.c_str(), 0777) != 0 && errno != EEXIST)
        return make_errno_error(errno, fmt::format("{} {}: create directory "
                                                   "{}",
                                                   verb, abs, path));
      unique_fd fd{::openat(cur, c.c_str(),
                            O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC)};
      if (!fd)
        return errno == ENOTDIR || errno == ELOOP
                 ? error{errc::path_not_found,
                         fmt::format("{} {}: a parent of it is not a "
                                     "directory",
                                     verb, abs)}
                 : make_errno_error(errno,
                                    fmt::format("{} {}: create directory {}",
                                                verb, abs, path));
      r.w.names.push_back(c);
      r.w.fds.push_back(std::move(fd));
    }
  }
  int fd = r.w.fds.empty() ? root_.get() : r.w.fds.back().get();
  r.host_dir = proc_fd(fd);
  r.shown_dir = dir;
  r.host = r.host_dir + "/" + name;
  r.shown = abs;
  return r;
}

namespace {

/// Runs `call` on what `r` resolved (its host path); an error of either
/// names the path as the session sees it.
template <class Resolved, class Call>
auto on_host(result<Resolved> r, Call&& call) -> decltype(call(*r)) {
  if (!r)
    return r.error();
  auto out = call(*r);
  if (!out)
    return r->show(out.error());
  return out;
}

/// `list` of what is not a directory: ENOTDIR, naming `abs`.
template <class Resolved>
result<void> check_dir(const Resolved& r, const std::string& abs) {
  if (!r.is_dir)
    return make_errno_error(ENOTDIR, fmt::format("list {}", abs));
  return {};
}

} // namespace

result<std::string> session_view::read_file(const std::string& abs,
                                            denial* refused) const {
  return on_host(resolve(abs, "read", mode::object, false, refused),
                 [](const resolved& r) { return fs::read_file(r.host); });
}

result<std::string>
session_view::read_text(const std::string& abs, uint64_t start_line,
                        uint64_t end_line, denial* refused) const {
  return on_host(resolve(abs, "read", mode::object, false, refused),
                 [&](const resolved& r) {
                   return fs::read_text(r.host, start_line, end_line);
                 });
}

result<file_reader> session_view::open_reader(const std::string& abs,
                                              denial* refused) const {
  return on_host(resolve(abs, "read", mode::object, false, refused),
                 [&](const resolved& r) {
                   auto out = file_reader::open(r.host);
                   if (out)
                     out->show_as(abs);
                   return out;
                 });
}

result<atomic_writer>
session_view::open_writer(const std::string& abs,
                          std::optional<std::string> if_version,
                          denial* refused) const {
  auto r = resolve(abs, "write", mode::make_parents, true, refused);
  // As `atomic_writer::open`: a path ending in `/` names no file.
  if (!r && r.error().code == errc::path_not_found && names_directory(abs)
      && (refused == nullptr || refused->path.empty()))
    return error{errc::invalid_argument,
                 fmt::format("write {}: the path does not name a file (a "
                             "path ending in '/' names a directory)",
                             abs)};
  return on_host(std::move(r), [&](const resolved& r) {
    auto out = atomic_writer::open(r.host, std::move(if_version));
    if (out)
      out->show_as(abs);
    return out;
  });
}

result<void> session_view::write_file(const std::string& abs,
                                      std::string_view bytes,
                                      std::optional<std::string> if_version,
                                      denial* refused) const {
  auto writer = open_writer(abs, std::move(if_version), refused);
  if (!writer)
    return writer.error();
  if (auto written = writer->write(bytes); !written)
    return written.error();
  return writer->commit();
}

result<void> session_view::remove_file(const std::string& abs,
                                       denial* refused) const {
  return on_host(resolve(abs, "remove", mode::entry, true, refused),
                 [](const resolved& r) { return fs::remove_file(r.host); });
}

result<std::vector<dir_entry>> session_view::list_files(const std::string& abs,
                                                        denial* refused) const {
  auto r = resolve(abs, "list", mode::object, false, refused);
  if (!r)
    return r.error();
  if (auto dir = check_dir(*r, abs); !dir)
    return dir.error();
  auto out = fs::list_files(r->host);
  if (!out)
    return r->show(out.error());
  // The metadata of a symlink's target came from the host's view of the
  // link: look the target up again in the session's.
  int dir = r->w.fds.empty() ? root_.get() : r->w.fds.back().get();
  auto here = r->w.opened();
  for (auto& e : *out) {
    struct ::stat st;
    if (::fstatat(dir, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0
        || !S_ISLNK(st.st_mode))
      continue;
    e.has_metadata = false;
    e.is_dir = false;
    e.size = 0;
    auto path = fs::resolve(here, e.name);
    auto w = walk(root_.get(), path);
    if (w.err != 0 || denied(w.opened()))
      continue;
    int fd = w.fds.empty() ? root_.get() : w.fds.back().get();
    if (::fstat(fd, &st) != 0)
      continue;
    e.has_metadata = true;
    e.is_dir = S_ISDIR(st.st_mode);
    e.size = st.st_size < 0 ? 0 : static_cast<uint64_t>(st.st_size);
  }
  return out;
}

result<tree_walker> session_view::open_walker(const std::string& abs,
                                              uint32_t max_depth,
                                              denial* refused) const {
  return on_host(resolve(abs, "list", mode::object, false, refused),
                 [&](const resolved& r) -> result<tree_walker> {
                   if (auto dir = check_dir(r, abs); !dir)
                     return dir.error();
                   auto out = tree_walker::open(r.host, max_depth);
                   if (out)
                     out->show_as(abs);
                   return out;
                 });
}

result<file_stat> session_view::stat(const std::string& abs,
                                     denial* refused) const {
  return on_host(resolve(abs, "stat", mode::entry, false, refused),
                 [](const resolved& r) { return stat_path(r.host); });
}

} // namespace sandbox::fs
