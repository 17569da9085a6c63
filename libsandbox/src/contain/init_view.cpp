#include "contain/init_view.hpp"

#include <dirent.h>
#include <limits.h>
#include <linux/mount.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "core/paths.hpp"

namespace sandbox::detail {

namespace {

constexpr uint64_t read_only = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID
                               | MOUNT_ATTR_NODEV;
constexpr uint64_t writable = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

/// The system's read-only parts; a symbolic link among them (merged /usr)
/// stays one.
constexpr const char* system_dirs[] = {"/usr",    "/bin",   "/sbin",
                                       "/lib",    "/lib32", "/lib64",
                                       "/libx32", "/etc",   "/opt"};

/// The devices of the minimal /dev, bound from the host's.
constexpr const char* devices[] = {"null",   "zero",    "full",
                                   "random", "urandom", "tty"};

/// One step of the plan before it is sorted (absolute path).
struct entry {
  std::string path;
  /// Order at the same path: what lies over what.
  int rank = 0;
  view_mount::kind_t kind = view_mount::bind;
  std::string source;
  std::string data;
  uint64_t attr = 0;
  bool recursive = false;
  bool file = false;
  bool idmap = false;
  int tree = -1;
};

/// `path` without symbolic links where it exists.
std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string{buf} : path;
}

/// An empty directory or an unreadable file over `path`: the file is the
/// host's /dev/null on a `nodev` mount, so opening it fails (EACCES).
entry hide(const std::string& path, bool dir, int rank) {
  entry e;
  e.path = path;
  e.rank = rank;
  if (dir) {
    e.kind = view_mount::tmpfs;
    e.data = "mode=0755,size=64k";
  } else {
    e.source = "/dev/null";
    e.attr = read_only | MOUNT_ATTR_NOEXEC;
    e.file = true;
  }
  return e;
}

} // namespace

const std::vector<std::string>& etc_secrets() {
  static const std::vector<std::string> list = [] {
    std::vector<std::string> out{"/etc/shadow",          "/etc/shadow-",
                                 "/etc/gshadow",         "/etc/gshadow-",
                                 "/etc/sudoers",         "/etc/sudoers.d",
                                 "/etc/ssl/private",     "/etc/krb5.keytab",
                                 "/etc/security/opasswd"};
    if (DIR* d = ::opendir("/etc/ssh")) {
      while (auto* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name.size() > 4 && name.compare(name.size() - 4, 4, "_key") == 0)
          out.push_back("/etc/ssh/" + name);
      }
      ::closedir(d);
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  return list;
}

void plan_view(const containment_spec& spec, view_plan& out, bool own_ids) {
  std::vector<entry> es;
  // Host directories the view shows as they are (a denied path below one
  // is covered).
  std::vector<std::string> shown;
  for (auto* dir : system_dirs) {
    struct stat st;
    if (::lstat(dir, &st) != 0)
      continue;
    if (S_ISLNK(st.st_mode)) {
      char buf[PATH_MAX];
      auto n = ::readlink(dir, buf, sizeof(buf));
      if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf))
        continue;
      entry e;
      e.path = dir;
      e.kind = view_mount::symlink;
      e.data.assign(buf, static_cast<size_t>(n));
      es.push_back(std::move(e));
    } else if (S_ISDIR(st.st_mode)) {
      entry e;
      e.path = e.source = dir;
      e.attr = read_only;
      e.recursive = true;
      es.push_back(std::move(e));
      shown.push_back(dir);
    }
  }
  auto tmp_size = spec.limits.tmp_size > 0 ? spec.limits.tmp_size
                                           : default_tmp_size;
  auto private_tmp = fmt::format("mode=1777,size={}", tmp_size);
  auto add = [&](const char* path, view_mount::kind_t kind, std::string data) {
    entry e;
    e.path = path;
    e.kind = kind;
    e.data = std::move(data);
    es.push_back(std::move(e));
  };
  add("/dev", view_mount::tmpfs, "mode=0755,size=64k");
  for (auto* dev : devices) {
    auto host = fmt::format("/dev/{}", dev);
    struct stat st;
    if (::stat(host.c_str(), &st) != 0 || !S_ISCHR(st.st_mode))
      continue;
    // Devices need `dev`; they are bound one by one, nothing else.
    entry e;
    e.path = e.source = host;
    e.attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
    e.file = true;
    es.push_back(std::move(e));
  }
  add("/dev/pts", view_mount::devpts, {});
  add("/dev/ptmx", view_mount::symlink, "pts/ptmx");
  add("/dev/shm", view_mount::tmpfs, private_tmp);
  add("/dev/fd", view_mount::symlink, "/proc/self/fd");
  add("/dev/stdin", view_mount::symlink, "/proc/self/fd/0");
  add("/dev/stdout", view_mount::symlink, "/proc/self/fd/1");
  add("/dev/stderr", view_mount::symlink, "/proc/self/fd/2");
  add("/proc", view_mount::proc, {});
  add("/tmp", view_mount::tmpfs, private_tmp);
  // The session's own directories, at their host paths (Landlock rules and
  // the syscall watch resolve them there); the first naming a path wins.
  auto own = [&](const std::string& path, uint64_t attr) {
    auto p = real_path(path);
    if (p.empty() || p[0] != '/' || p == "/")
      return;
    for (auto& e : es)
      if (e.rank == 2 && e.path == p)
        return;
    entry e;
    e.path = e.source = p;
    e.rank = 2;
    e.attr = attr;
    e.recursive = true;
    e.idmap = (attr & MOUNT_ATTR_RDONLY) == 0;
    es.push_back(std::move(e));
    shown.push_back(p);
  };
  own(spec.working_directory, writable);
  own(spec.home_directory, writable);
  for (auto& p : spec.allow_write)
    own(p, writable);
  for (auto& p : spec.allow_read)
    own(p, read_only);
  // Denied paths: covered where the view shows them; outside it only the
  // node's placeholders and detached mounts are mounted (at the host's
  // path), so that an attempt there is still reported.
  auto deny = spec.deny;
  std::sort(deny.begin(), deny.end());
  std::vector<std::string> masked;
  for (auto& d : deny) {
    struct stat st;
    if (d.empty() || d[0] != '/' || ::stat(d.c_str(), &st) != 0)
      continue;
    bool covered = false;
    for (auto& m : masked)
      covered = covered || inside(d, m);
    bool visible = false;
    for (auto& s : shown)
      visible = visible || inside(d, s);
    if (covered)
      continue;
    bool dir = S_ISDIR(st.st_mode);
    auto ph = spec.placeholders.find(d);
    auto tree = spec.mounts.find(d);
    // With ids of its own the init cannot make mount points in the node's
    // placeholder directory outside the view: one that holds a directory
    // of the session is left out (its other names are not in the view
    // either). The FUSE cover shows the session's directories itself.
    bool holds_own = false;
    for (auto& e : es)
      holds_own = holds_own || (e.rank == 2 && inside(e.path, d));
    if (own_ids && !visible && holds_own && !(tree != spec.mounts.end() && dir))
      continue;
    entry e;
    if (tree != spec.mounts.end() && dir) {
      e.path = d;
      e.tree = tree->second;
      e.recursive = true;
    } else if (ph != spec.placeholders.end()) {
      e.path = d;
      e.source = ph->second;
      e.attr = writable;
      e.recursive = dir;
      e.file = !dir;
    } else if (visible) {
      e = hide(d, dir, 1);
    } else {
      continue;
    }
    e.rank = 1;
    es.push_back(std::move(e));
    masked.push_back(d);
  }
  // Parents first; at one path by rank.
  std::stable_sort(es.begin(), es.end(), [](const entry& a, const entry& b) {
    return a.path != b.path ? a.path < b.path : a.rank < b.rank;
  });
  auto keep = [&](std::string s) {
    out.strings.push_back(std::move(s));
    return out.strings.back().c_str();
  };
  for (auto& e : es) {
    view_mount m;
    m.kind = e.kind;
    auto rel = e.path.substr(1);
    m.target = keep(rel);
    m.source = e.source.empty() ? nullptr : keep(e.source);
    m.data = e.data.empty() ? nullptr : keep(e.data);
    m.attr = e.attr;
    m.recursive = e.recursive;
    m.file = e.file;
    m.idmap = e.idmap;
    m.tree = e.tree;
    std::vector<const char*> dirs;
    bool own_dir = !e.file && e.kind != view_mount::symlink;
    for (size_t at = 1; at <= rel.size(); ++at)
      if ((at == rel.size() && own_dir) || (at < rel.size() && rel[at] == '/'))
        dirs.push_back(keep(rel.substr(0, at)));
    out.dirs.push_back(std::move(dirs));
    m.dirs = out.dirs.back().data();
    m.ndirs = out.dirs.back().size();
    out.mounts.push_back(m);
  }
}

} // namespace sandbox::detail
