// `sandbox read`, `write`, `rm`, `ls` and `stat`: file operations in a
// session, through its filesystem worker (docs/files.md).

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cli.hpp"
#include "interrupt.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "sandbox/fs/file_io.hpp"

namespace sandbox::cli {

namespace {

/// Chunk size of `write`: stdin is read and sent this much at a time.
constexpr size_t write_chunk = 1024 * 1024;

/// Output of `ls` is flushed to stdout once this much is buffered.
constexpr size_t ls_flush = 64 * 1024;

/// The largest --start-line / --end-line.
constexpr uint64_t max_line = INT64_MAX;

/// The largest --depth.
constexpr uint64_t max_depth = UINT32_MAX;

/// Runs `body` with the filesystem worker of a session (see
/// `with_session`).
int with_files(const global_options& g,
               const std::function<int(actors::blocking_files&)>& body) {
  return with_session(g, [&](actors::blocking_session& s) {
    auto files = actors::files_of(s);
    if (!files)
      return report(g, files.error());
    return body(*files);
  });
}

/// Cuts a chunk of a byte stream so that a UTF-8 sequence split by the
/// chunking travels whole in the next one: returns how many bytes at the
/// end of `bytes` to hold back (0 to 3).
size_t incomplete_utf8_tail(std::string_view bytes) {
  size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80)
      continue; // a continuation byte: look further back
    size_t len = (c & 0xE0) == 0xC0   ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 1;
    return len > back ? back : 0;
  }
  return 0;
}

/// Streams the bytes of `path` through `out`, each piece as it arrives.
/// With `range`, only the bytes of its lines, and the stream ends once the
/// last of them is complete. Memory holds one chunk. Stops when `out`
/// returns false (the stream's error is then `aborted`).
result<void> stream_file(actors::blocking_files& files, const std::string& path,
                         fs::line_range* range,
                         const std::function<bool(std::string_view)>& out) {
  auto total = files.read_stream(path, [&](const std::string& chunk) {
    auto part = range == nullptr ? std::string_view{chunk}
                                 : range->select(chunk);
    if (!part.empty() && !out(part))
      return false;
    return range == nullptr || !range->done();
  });
  // Cancelled by us after the range's last line: nothing is missing.
  if (!total && (range == nullptr || !range->done()))
    return total.error();
  return {};
}

/// `read --json`: `chunk` lines as the file (or the lines of `range`)
/// streams in, then the line `summary` makes of the count of bytes
/// printed. Memory holds about one chunk.
int read_json_stream(
  const global_options& g, actors::blocking_files& files,
  const std::string& path, fs::line_range* range,
  const std::function<nlohmann::ordered_json(uint64_t)>& summary) {
  uint64_t offset = 0;
  std::string pending;
  auto flush = [&](bool last) {
    auto keep = last ? 0 : incomplete_utf8_tail(pending);
    if (pending.size() == keep)
      return true;
    std::string_view out{pending.data(), pending.size() - keep};
    nlohmann::ordered_json j{{"type", "chunk"}, {"offset", offset}};
    put_bytes(j, out);
    offset += out.size();
    pending.erase(0, out.size());
    return print_json(j);
  };
  auto done = stream_file(files, path, range, [&](std::string_view bytes) {
    pending += bytes;
    return flush(false);
  });
  if (!done)
    return report(g, done.error());
  if (!flush(true))
    return exit_error;
  print_json(summary(offset));
  return exit_ok;
}

} // namespace

// -- read ---------------------------------------------------------------------

command add_read(CLI::App& app, global_options& g) {
  struct flags {
    std::string path;
    std::string start_line;
    std::string end_line;
  };
  auto f = std::make_shared<flags>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "read", "print a file's bytes (with --json: data lines, then a summary)");
  cmd.sub->add_option("path", f->path, "the file, relative to the session")
    ->required();
  cmd.sub->add_option("--start-line", f->start_line,
                      "first line to print (1-based)");
  cmd.sub->add_option("--end-line", f->end_line,
                      "last line to print (1-based, inclusive)");
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, f] {
    uint64_t start = 0;
    uint64_t end = 0;
    for (auto [name, text, out] :
         {std::tuple{"--start-line", &f->start_line, &start},
          std::tuple{"--end-line", &f->end_line, &end}}) {
      if (text->empty())
        continue;
      auto n = parse_integer(name, *text, 1, max_line);
      if (!n)
        return usage_error(g, n.error().message);
      *out = *n;
    }
    if (start != 0 && end != 0 && start > end)
      return usage_error(g, fmt::format("--start-line {} is after "
                                        "--end-line {}",
                                        start, end));
    return with_files(g, [&](actors::blocking_files& files) {
      std::optional<fs::line_range> range;
      if (start != 0 || end != 0)
        range.emplace(start, end);
      auto* lines = range ? &*range : nullptr;
      if (g.json)
        return read_json_stream(g, files, f->path, lines, [&](uint64_t bytes) {
          nlohmann::ordered_json j{{"type", lines ? "lines" : "read"}};
          put_path(j, "path", f->path);
          if (!lines) {
            j["size"] = bytes;
            return j;
          }
          j["start_line"] = start == 0 ? 1 : start;
          j["end_line"] = end == 0 ? nlohmann::ordered_json{}
                                   : nlohmann::ordered_json(end);
          j["bytes"] = bytes;
          return j;
        });
      // Raw bytes stream straight through: memory holds one chunk.
      auto done = stream_file(files, f->path, lines,
                              [](std::string_view b) { return emit(1, b); });
      if (!done && !output_failed())
        return report(g, done.error());
      return exit_ok;
    });
  };
  return cmd;
}

// -- write --------------------------------------------------------------------

command add_write(CLI::App& app, global_options& g) {
  struct flags {
    std::string path;
    std::string if_version;
    CLI::Option* if_version_opt = nullptr;
  };
  auto f = std::make_shared<flags>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "write", "replace a file atomically with the bytes of stdin");
  cmd.sub->add_option("path", f->path, "the file, relative to the session")
    ->required();
  f->if_version_opt = cmd.sub->add_option(
    "--if-version", f->if_version,
    "write only if the file's version (see stat) is still this one; '' "
    "means the file must not exist");
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, f] {
    return with_files(g, [&](actors::blocking_files& files) {
      std::optional<std::string> if_version;
      if (f->if_version_opt->count() > 0)
        if_version = f->if_version;
      auto writer = files.open_write(f->path, if_version);
      if (!writer)
        return report(g, writer.error());
      // An interrupt drops the temporary file before the CLI exits.
      auto id = writer->id();
      interrupt_guard guard{[&files, id] {
        (void) files.abort_write(id);
        _exit(128 + interrupted_by());
      }};
      std::string buf;
      for (;;) {
        buf.resize(write_chunk);
        auto n = read_full(0, buf, "stdin");
        if (!n) {
          writer->abort();
          return report(g, n.error());
        }
        if (*n == 0)
          break;
        buf.resize(*n);
        if (auto ok = writer->write(std::move(buf)); !ok)
          return report(g, ok.error());
        buf = std::string{};
        if (*n < write_chunk)
          break;
      }
      if (auto ok = writer->commit(); !ok)
        return report(g, ok.error());
      if (g.json) {
        nlohmann::ordered_json j{{"type", "written"}};
        put_path(j, "path", f->path);
        j["bytes"] = writer->bytes();
        print_json(j);
      }
      return exit_ok;
    });
  };
  return cmd;
}

// -- rm -----------------------------------------------------------------------

command add_rm(CLI::App& app, global_options& g) {
  auto path = std::make_shared<std::string>();
  command cmd;
  cmd.sub = app.add_subcommand("rm", "remove a file or symlink");
  cmd.sub->add_option("path", *path, "the file, relative to the session")
    ->required();
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, path] {
    return with_files(g, [&](actors::blocking_files& files) {
      if (auto ok = files.remove_file(*path); !ok)
        return report(g, ok.error());
      if (g.json) {
        nlohmann::ordered_json j{{"type", "removed"}};
        put_path(j, "path", *path);
        print_json(j);
      }
      return exit_ok;
    });
  };
  return cmd;
}

// -- ls -----------------------------------------------------------------------

command add_ls(CLI::App& app, global_options& g) {
  struct flags {
    std::string path = ".";
    std::string depth = "1";
  };
  auto f = std::make_shared<flags>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "ls", "list a directory tree, depth-first, names sorted by bytes");
  cmd.sub->add_option("path", f->path,
                      "the directory, relative to the session (default .)");
  cmd.sub->add_option("--depth", f->depth,
                      fmt::format("levels below PATH to list, 0 to {} "
                                  "(default 1; 0 lists nothing)",
                                  max_depth));
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, f] {
    auto depth = parse_integer("--depth", f->depth, 0, max_depth);
    if (!depth)
      return usage_error(g, depth.error().message);
    return with_files(g, [&](actors::blocking_files& files) {
      std::string out;
      auto done = files.list(
        f->path, static_cast<uint32_t>(*depth), [&](const fs::frame& x) {
          if (g.json) {
            out += json_line(wire::frame_json(x));
            out += '\n';
          } else {
            out += fmt::format("{} {} {}{}\n", to_string(x.kind), x.size,
                               escape_control(x.path),
                               x.kind == fs::file_kind::dir ? "/" : "");
          }
          if (out.size() >= ls_flush) {
            if (!emit(1, out))
              return false;
            out.clear();
          }
          return true;
        });
      if (!emit(1, out))
        return exit_error;
      if (!g.json)
        return done.error ? report(g, *done.error) : exit_ok;
      print_json(wire::done_json(done.count, done.error));
      return done.error ? exit_error : exit_ok;
    });
  };
  return cmd;
}

// -- stat ---------------------------------------------------------------------

command add_stat(CLI::App& app, global_options& g) {
  auto path = std::make_shared<std::string>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "stat", "metadata and version of a path (symlinks are not followed)");
  cmd.sub->add_option("path", *path, "the path, relative to the session")
    ->required();
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, path] {
    return with_files(g, [&](actors::blocking_files& files) {
      auto st = files.stat(*path);
      if (!st)
        return report(g, st.error());
      if (g.json) {
        print_json(wire::stat_json(*path, *st));
      } else {
        emit(1, fmt::format("kind={} size={} mtime_ns={} dev={} ino={} "
                            "version={}\n",
                            to_string(st->kind), st->size, st->mtime_ns,
                            st->dev, st->ino, st->version));
      }
      return exit_ok;
    });
  };
  return cmd;
}

} // namespace sandbox::cli
