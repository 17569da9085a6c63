#include "contain/init_view.hpp"

#include <dirent.h>
#include <limits.h>
#include <linux/mount.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "contain/session_init.hpp"
#include "core/paths.hpp"
#include "process/child_syscall.hpp"

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

/// Builds the session's root from `mounts` (init_view.hpp) and pivots into
/// it; the host's tree is gone from the namespace afterwards. -errno with
/// `stage` set on failure.
SANDBOX_CHILD_FN long build_view(view_mount* mounts, size_t n, int& stage) {
  long r = 0;
  // What the root takes from the host is cloned while the host's tree is
  // the root, with its attributes set before anything can use it.
  for (size_t i = 0; i < n; ++i) {
    auto& m = mounts[i];
    if (m.kind != view_mount::bind || m.source == nullptr || m.tree >= 0)
      continue;
    r = child_sys(SYS_open_tree, AT_FDCWD, reinterpret_cast<long>(m.source),
                  OPEN_TREE_CLONE | O_CLOEXEC
                    | (m.recursive ? AT_RECURSIVE : 0));
    if (r < 0) {
      stage = init_open_tree;
      return r;
    }
    m.tree = static_cast<int>(r);
    struct mount_attr attr;
    for (size_t j = 0; j < sizeof(attr); ++j)
      reinterpret_cast<volatile char*>(&attr)[j] = 0;
    attr.attr_set = m.attr;
    r = child_sys(SYS_mount_setattr, m.tree, reinterpret_cast<long>(""),
                  AT_EMPTY_PATH | (m.recursive ? AT_RECURSIVE : 0),
                  reinterpret_cast<long>(&attr), sizeof(attr));
    if (r < 0) {
      stage = init_attr;
      return r;
    }
  }
  // The new root is staged on /tmp (everything of the host's /tmp it needs
  // was cloned above) and built relative to it.
  if ((r = child_sys(SYS_mount, reinterpret_cast<long>("tmpfs"),
                     reinterpret_cast<long>("/tmp"),
                     reinterpret_cast<long>("tmpfs"), MS_NOSUID | MS_NODEV,
                     reinterpret_cast<long>("mode=0755,size=64k")))
        < 0
      || (r = child_sys(SYS_chdir, reinterpret_cast<long>("/tmp"))) < 0) {
    stage = init_root;
    return r;
  }
  for (size_t i = 0; i < n; ++i) {
    auto& m = mounts[i];
    auto target = reinterpret_cast<long>(m.target);
    stage = init_mkdir;
    // What exists already (a directory of a read-only bind) is not made
    // again: making it would fail with EROFS there.
    struct stat st;
    for (size_t j = 0; j < m.ndirs; ++j) {
      if (child_sys(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(m.dirs[j]),
                    reinterpret_cast<long>(&st), 0)
          == 0)
        continue;
      r = child_sys(SYS_mkdirat, AT_FDCWD, reinterpret_cast<long>(m.dirs[j]),
                    0755);
      if (r < 0 && r != -EEXIST)
        return r;
    }
    if (m.file
        && child_sys(SYS_newfstatat, AT_FDCWD, target,
                     reinterpret_cast<long>(&st), AT_SYMLINK_NOFOLLOW)
             != 0) {
      r = child_sys(SYS_openat, AT_FDCWD, target,
                    O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (r < 0)
        return r;
      child_sys(SYS_close, r);
    }
    switch (m.kind) {
      case view_mount::bind:
        stage = init_move_mount;
        r = child_sys(SYS_move_mount, m.tree, reinterpret_cast<long>(""),
                      AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH);
        break;
      case view_mount::tmpfs:
        stage = init_tmpfs;
        r = child_sys(SYS_mount, reinterpret_cast<long>("tmpfs"), target,
                      reinterpret_cast<long>("tmpfs"), MS_NOSUID | MS_NODEV,
                      reinterpret_cast<long>(m.data));
        break;
      case view_mount::proc:
        // Made while the host's /proc is still in the namespace: the
        // kernel lets a user namespace mount proc only where a full one
        // is visible.
        stage = init_proc;
        r = child_sys(SYS_mount, reinterpret_cast<long>("proc"), target,
                      reinterpret_cast<long>("proc"),
                      MS_NOSUID | MS_NODEV | MS_NOEXEC, 0);
        break;
      case view_mount::devpts:
        // A devpts instance of its own: the host's terminals (the one
        // the CLI runs in) are not in the view, and /dev/ptmx (a link to
        // pts/ptmx) makes terminals of this instance only. Not `nodev`:
        // its nodes are the terminals.
        stage = init_devpts;
        r = child_sys(SYS_mount, reinterpret_cast<long>("devpts"), target,
                      reinterpret_cast<long>("devpts"), MS_NOSUID | MS_NOEXEC,
                      reinterpret_cast<long>("newinstance,ptmxmode=0666,"
                                             "mode=0620"));
        break;
      case view_mount::symlink:
        stage = init_symlink;
        r = child_sys(SYS_symlinkat, reinterpret_cast<long>(m.data), AT_FDCWD,
                      target);
        break;
    }
    if (r < 0)
      return r;
  }
  // pivot_root(".", "."): the old root lands on top of the new one and is
  // detached from there; nothing of the host's tree stays reachable.
  stage = init_pivot;
  if ((r = child_sys(SYS_pivot_root, reinterpret_cast<long>("."),
                     reinterpret_cast<long>(".")))
        < 0
      || (r = child_sys(SYS_umount2, reinterpret_cast<long>("."), MNT_DETACH))
           < 0
      || (r = child_sys(SYS_chdir, reinterpret_cast<long>("/"))) < 0)
    return r;
  stage = init_root;
  r = child_sys(SYS_mount, 0, reinterpret_cast<long>("/"), 0,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, 0);
  if (r < 0)
    return r;
  stage = init_ok;
  return 0;
}

} // namespace sandbox::detail
