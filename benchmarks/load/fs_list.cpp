// Scenario 5: listing a 200,000-entry tree through a session's filesystem
// worker (`list`, §16: frames in acknowledged batches) against readdir +
// fstatat. The note also gives libsandbox's `fs::tree_walker` alone (what
// the worker walks with), which separates the cost of the walk from the
// cost of the actor path.

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "bench.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/fs/listing.hpp"

namespace sandbox::bench {

namespace {

/// Entries per directory of the generated tree.
constexpr uint64_t fanout = 1000;

/// Builds `root` with `entries` entries: directories of empty files, one
/// level deep (the directories count as entries too).
void build_tree(const std::string& root, uint64_t entries) {
  if (!make_dirs(root))
    throw std::runtime_error("cannot create " + root);
  auto dirs = std::max<uint64_t>(1, entries / fanout);
  auto files = entries - dirs;
  int root_fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0)
    throw std::runtime_error("cannot open " + root);
  for (uint64_t d = 0; d < dirs; ++d) {
    auto name = fmt::format("d{:04}", d);
    if (::mkdirat(root_fd, name.c_str(), 0755) != 0)
      throw std::runtime_error("cannot create " + root + "/" + name);
    int dir_fd = ::openat(root_fd, name.c_str(),
                          O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    auto here = files / dirs + (d < files % dirs ? 1 : 0);
    for (uint64_t f = 0; f < here; ++f) {
      auto file = fmt::format("f{:05}", f);
      int fd = ::openat(dir_fd, file.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0)
        throw std::runtime_error("cannot create " + file);
      ::close(fd);
    }
    ::close(dir_fd);
  }
  ::close(root_fd);
}

/// The baseline: readdir + fstatat (no sorting), depth first.
uint64_t walk_raw(int dir_fd) {
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    ::close(dir_fd);
    return 0;
  }
  uint64_t n = 0;
  while (auto* e = ::readdir(dir)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0)
      continue;
    struct ::stat st;
    if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    ++n;
    if (S_ISDIR(st.st_mode)) {
      int sub = ::openat(::dirfd(dir), e->d_name,
                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0)
        n += walk_raw(sub);
    }
  }
  ::closedir(dir);
  return n;
}

uint64_t walk_raw(const std::string& root) {
  return walk_raw(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

/// Deep enough for any generated tree.
constexpr uint32_t max_depth = 64;

/// Ours: every frame of the tree through the worker's `list`.
uint64_t walk_ours(actors::blocking_files& files, const std::string& root) {
  uint64_t n = 0;
  uint64_t bytes = 0;
  auto done = files.list(root, max_depth, [&](const fs::frame& f) {
    bytes += f.size + f.path.size();
    ++n;
    return true;
  });
  if (done.error)
    throw std::runtime_error("list: " + done.error->message);
  if (done.count != n)
    throw std::runtime_error(fmt::format("list: done frame counts {}, {} "
                                         "frames seen",
                                         done.count, n));
  return bytes == UINT64_MAX ? 0 : n;
}

/// The walk alone: libsandbox's walker in this thread.
uint64_t walk_core(const std::string& root) {
  auto walker = fs::tree_walker::open(root, max_depth);
  if (!walker)
    throw std::runtime_error(walker.error().message);
  uint64_t n = 0;
  uint64_t bytes = 0;
  for (;;) {
    auto next = walker->next();
    if (!next)
      throw std::runtime_error(next.error().message);
    if (!*next)
      break;
    bytes += (*next)->size + (*next)->path.size();
    ++n;
  }
  // Keeps the frames' contents observable.
  return bytes == UINT64_MAX ? 0 : n;
}

struct walk_stats {
  double best_seconds = 0;
  uint64_t entries = 0;
  uint64_t peak = 0;
};

template <class F>
walk_stats measure(F walk, int repeats) {
  walk_stats out;
  walk(); // warm the dentry and inode caches
  for (int i = 0; i < repeats; ++i) {
    peak_meter meter;
    auto start = clock::now();
    out.entries = walk();
    auto secs = seconds_since(start);
    out.peak = std::max(out.peak, meter.growth());
    if (i == 0 || secs < out.best_seconds)
      out.best_seconds = secs;
  }
  return out;
}

} // namespace

std::vector<row> run_list(const options& opt) {
  auto root = opt.scratch + "/tree";
  auto build_start = clock::now();
  build_tree(root, opt.tree_entries);
  auto build_secs = seconds_since(build_start);
  const int repeats = opt.quick ? 1 : 3;
  auto raw = measure([&] { return walk_raw(root); }, repeats);
  auto core = measure([&] { return walk_core(root); }, repeats);
  walk_stats ours;
  {
    actors::embedded_node node{node_config(opt)};
    auto s = make_session(node, opt, "list");
    auto files = actors::files_of(s);
    if (!files)
      throw std::runtime_error("files: " + files.error().message);
    ours = measure([&] { return walk_ours(*files, root); }, repeats);
    stop_session(s);
  }
  remove_tree(root);
  if (raw.entries != opt.tree_entries || ours.entries != opt.tree_entries
      || core.entries != opt.tree_entries)
    throw std::runtime_error(fmt::format("listed {} (raw {}, walker {}) of "
                                         "{} entries",
                                         ours.entries, raw.entries,
                                         core.entries, opt.tree_entries));
  auto count = fmt::format("{}", opt.tree_entries);
  for (int i = static_cast<int>(count.size()) - 3; i > 0; i -= 3)
    count.insert(static_cast<size_t>(i), ",");
  std::vector<row> rows;
  row t;
  t.scenario = 5;
  t.key = "list_tput";
  t.label = fmt::format("list {}-entry tree", count);
  t.unit = "entries/s";
  t.ours = static_cast<double>(ours.entries) / ours.best_seconds;
  t.baseline = static_cast<double>(raw.entries) / raw.best_seconds;
  t.goal = ">= 0.5 x raw";
  t.result = judge(t.ratio() >= 0.5);
  t.note = fmt::format("best of {}; fs::tree_walker alone: {:.0f}/s; "
                       "tree built in {:.1f} s",
                       repeats,
                       static_cast<double>(core.entries) / core.best_seconds,
                       build_secs);
  rows.push_back(std::move(t));
  row m;
  m.scenario = 5;
  m.key = "list_mem";
  m.label = "list, node peak RSS growth";
  m.unit = "MiB";
  m.ours = static_cast<double>(ours.peak) / (1 << 20);
  m.baseline = static_cast<double>(raw.peak) / (1 << 20);
  m.goal = "< 32 MiB";
  m.result = judge(m.ours < 32);
  m.note = fmt::format("fs::tree_walker alone: {:.2f} MiB",
                       static_cast<double>(core.peak) / (1 << 20));
  rows.push_back(std::move(m));
  return rows;
}

} // namespace sandbox::bench
