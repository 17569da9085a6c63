// Scenario 6: writing and reading a 1 MiB file through a session's
// filesystem worker (`write_file`: atomic, temp file + rename, §13;
// `read_file`, §11) against direct write(2) and read(2). The note also gives
// libsandbox's `fs::write_file` / `fs::read_file` alone, which separates the
// cost of atomicity from the cost of the actor path. A third row times the
// pair (an atomic write, then a read of what it wrote) through the facade
// against the same pair on the calling thread, the same system calls
// without the actor path: what the facade costs a caller (issue 35's goal:
// >= 0.9); the pair and its baseline alternate in short rounds.
//
// The write baseline creates a fresh file each time (unlink, then open,
// write, close): the plain cost of putting 1 MiB into the page cache.
// Overwriting an existing file in place (O_TRUNC) is also measured and
// given in the note: on ext4 it starts writeback at close (auto_da_alloc),
// as a rename over an existing file does, and is far slower.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <stdexcept>

#include "bench.hpp"
#include "load_driver.hpp"
#include "payload.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/fs/file_io.hpp"

namespace sandbox::bench {

namespace {

constexpr size_t file_size = 1 << 20;

/// open(O_TRUNC) + write + close; with `fresh`, the file is unlinked first.
bool write_raw(const std::string& path, const std::string& data, bool fresh) {
  if (fresh)
    ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  size_t off = 0;
  while (off < data.size()) {
    auto n = ::write(fd, data.data() + off, data.size() - off);
    if (n <= 0)
      break;
    off += static_cast<size_t>(n);
  }
  return ::close(fd) == 0 && off == data.size();
}

bool read_raw(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct ::stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return false;
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t off = 0;
  while (off < out.size()) {
    auto n = ::read(fd, out.data() + off, out.size() - off);
    if (n <= 0)
      break;
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  return off == file_size;
}

bool write_core(const std::string& path, const std::string& data) {
  return fs::write_file(path, data).has_value();
}

bool read_core(const std::string& path) {
  auto r = fs::read_file(path);
  return r && r->size() == file_size;
}

row make_row(const char* key, const char* what, const load_result& ours,
             const load_result& raw, const load_result& core,
             const load_result* in_place = nullptr) {
  row r;
  r.scenario = 6;
  r.key = key;
  r.label = fmt::format("{} 1 MiB file", what);
  r.unit = "ops/s";
  r.ours = ours.rate();
  r.baseline = raw.rate();
  r.note = fmt::format("{} alone: {:.0f}/s",
                       key[0] == 'w' ? "fs::write_file" : "fs::read_file",
                       core.rate());
  if (in_place != nullptr)
    r.note += fmt::format("; raw overwrite in place: {:.0f}/s",
                          in_place->rate());
  if (ours.errors + raw.errors + core.errors > 0)
    r.note += fmt::format("; errors: ours {}, raw {}, core {}", ours.errors,
                          raw.errors, core.errors);
  return r;
}

} // namespace

std::vector<row> run_files(const options& opt) {
  auto dir = opt.scratch + "/files";
  if (!make_dirs(dir))
    throw std::runtime_error("cannot create " + dir);
  auto data = make_payload(file_size);
  auto raw_path = dir + "/raw.bin";
  auto core_path = dir + "/core.bin";
  auto ours_path = dir + "/ours.bin";
  const double secs = opt.quick ? 0.3 : 1.0;
  auto once = [](auto f) { return [f](size_t) { return f(); }; };
  auto raw_w = drive(1, secs, false,
                     once([&] { return write_raw(raw_path, data, true); }));
  auto in_place_w = drive(
    1, secs, false, once([&] { return write_raw(raw_path, data, false); }));
  auto core_w = drive(1, secs, false,
                      once([&] { return write_core(core_path, data); }));
  auto raw_r = drive(1, secs, false, once([&] { return read_raw(raw_path); }));
  auto core_r = drive(1, secs, false,
                      once([&] { return read_core(core_path); }));
  load_result core_wr;
  load_result ours_w;
  load_result ours_r;
  load_result ours_wr;
  {
    actors::embedded_node node{node_config(opt)};
    auto s = make_session(node, opt, "files-session");
    auto files = actors::files_of(s);
    if (!files)
      throw std::runtime_error("files: " + files.error().message);
    auto write_ours = [&] {
      return files->write_file(ours_path, data).has_value();
    };
    auto read_ours = [&] {
      auto r = files->read_file(ours_path);
      return r && r->size() == file_size;
    };
    ours_w = drive(1, secs, false, once(write_ours));
    ours_r = drive(1, secs, false, once(read_ours));
    // The pair alternates with its baseline in short rounds: a write's
    // cost follows the writeback the previous writes started, which drifts
    // over seconds, and both sides then meet the same drift.
    const int rounds = opt.quick ? 2 : 8;
    for (int i = 0; i < rounds; ++i) {
      merge(ours_wr, drive(1, secs / rounds, false,
                           once([&] { return write_ours() && read_ours(); })));
      merge(core_wr, drive(1, secs / rounds, false, once([&] {
                             return write_core(core_path, data)
                                    && read_core(core_path);
                           })));
    }
    stop_session(s);
  }
  remove_tree(dir);
  row pair;
  pair.scenario = 6;
  pair.key = "write_read";
  pair.label = "write + read 1 MiB file";
  pair.unit = "pairs/s";
  pair.ours = ours_wr.rate();
  pair.baseline = core_wr.rate();
  pair.goal = ">= 0.9 x the calling thread";
  pair.result = judge(pair.ratio() >= 0.9);
  pair.note = "baseline: fs::write_file + fs::read_file on the calling "
              "thread (the same system calls, no actor)";
  if (ours_wr.errors + core_wr.errors > 0)
    pair.note += fmt::format("; errors: ours {}, baseline {}", ours_wr.errors,
                             core_wr.errors);
  return {make_row("write", "write", ours_w, raw_w, core_w, &in_place_w),
          make_row("read", "read", ours_r, raw_r, core_r), std::move(pair)};
}

} // namespace sandbox::bench
