// `sandbox read`, `write`, `rm`, `ls` and `stat`: file operations in a
// session, through its filesystem worker (R11-R17, DESIGN.md §5).

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli.hpp"
#include "interrupt.hpp"
#include "sandbox/actors/blocking_files.hpp"

namespace sandbox::cli {

namespace {

/// Chunk size of `write`: stdin is read and sent this much at a time.
constexpr size_t write_chunk = 1024 * 1024;

/// Output of `ls` is flushed to stdout once this much is buffered.
constexpr size_t ls_flush = 64 * 1024;

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

int usage_error(const std::string& message) {
  write_fd(2, fmt::format("sandbox: {}\n", message));
  return exit_usage;
}

/// Reads up to `buf.size()` bytes from stdin, fewer only at its end.
result<size_t> read_stdin(std::string& buf) {
  size_t used = 0;
  while (used < buf.size()) {
    auto n = ::read(0, buf.data() + used, buf.size() - used);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return make_errno_error(errno, "write: cannot read stdin");
    if (n == 0)
      break;
    used += static_cast<size_t>(n);
  }
  return used;
}

} // namespace

// -- read ---------------------------------------------------------------------

command add_read(CLI::App& app, global_options& g) {
  struct flags {
    std::string path;
    uint64_t start_line = 0;
    uint64_t end_line = 0;
  };
  auto f = std::make_shared<flags>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "read", "print a file's bytes (with --json: one object with the data)");
  cmd.sub->add_option("path", f->path, "the file, relative to the session")
    ->required();
  cmd.sub
    ->add_option("--start-line", f->start_line,
                 "first line to print (1-based)")
    ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  cmd.sub
    ->add_option("--end-line", f->end_line, "last line to print (inclusive)")
    ->check(CLI::Range(uint64_t{1}, UINT64_MAX));
  cmd.run = [&g, f] {
    if (f->start_line != 0 && f->end_line != 0
        && f->start_line > f->end_line)
      return usage_error(fmt::format("--start-line {} is after --end-line {}",
                                     f->start_line, f->end_line));
    return with_files(g, [&](actors::blocking_files& files) {
      auto lines = f->start_line != 0 || f->end_line != 0;
      if (!lines && !g.json) {
        // Raw bytes stream straight through: memory holds one chunk.
        auto total = files.read_stream(f->path, [](const std::string& chunk) {
          write_fd(1, chunk);
          return true;
        });
        return total ? exit_ok : report(g, total.error());
      }
      auto bytes = lines ? files.read_text(f->path,
                                           f->start_line == 0 ? 1
                                                              : f->start_line,
                                           f->end_line)
                         : files.read_file(f->path);
      if (!bytes)
        return report(g, bytes.error());
      if (!g.json) {
        write_fd(1, *bytes);
        return exit_ok;
      }
      nlohmann::ordered_json j{{"path", f->path}, {"size", bytes->size()}};
      put_bytes(j, *bytes);
      print_json(j);
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
        _exit(130);
      }};
      std::string buf;
      for (;;) {
        buf.resize(write_chunk);
        auto n = read_stdin(buf);
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
      if (g.json)
        print_json({{"path", f->path}, {"bytes", writer->bytes()}});
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
  cmd.run = [&g, path] {
    return with_files(g, [&](actors::blocking_files& files) {
      if (auto ok = files.remove_file(*path); !ok)
        return report(g, ok.error());
      if (g.json)
        print_json({{"path", *path}, {"removed", true}});
      return exit_ok;
    });
  };
  return cmd;
}

// -- ls -----------------------------------------------------------------------

command add_ls(CLI::App& app, global_options& g) {
  struct flags {
    std::string path = ".";
    uint32_t depth = 1;
  };
  auto f = std::make_shared<flags>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "ls", "list a directory tree, depth-first, names sorted by bytes");
  cmd.sub->add_option("path", f->path,
                      "the directory, relative to the session (default .)");
  cmd.sub->add_option("--depth", f->depth,
                      "levels below PATH to list (default 1; 0 lists "
                      "nothing)");
  cmd.run = [&g, f] {
    return with_files(g, [&](actors::blocking_files& files) {
      std::string out;
      auto done = files.list(f->path, f->depth, [&](const fs::frame& x) {
        if (g.json) {
          nlohmann::ordered_json j{{"type", "entry"},
                                   {"path", x.path},
                                   {"name", x.name},
                                   {"kind", std::string{to_string(x.kind)}},
                                   {"size", x.size}};
          out += j.dump(-1, ' ', false,
                        nlohmann::ordered_json::error_handler_t::replace);
          out += '\n';
        } else {
          out += fmt::format("{} {} {}{}\n", to_string(x.kind), x.size,
                             x.path, x.kind == fs::file_kind::dir ? "/" : "");
        }
        if (out.size() >= ls_flush) {
          write_fd(1, out);
          out.clear();
        }
        return true;
      });
      write_fd(1, out);
      if (!g.json)
        return done.error ? report(g, *done.error) : exit_ok;
      nlohmann::ordered_json error = nullptr;
      if (done.error)
        error = {{"code", std::string{to_string(done.error->code)}},
                 {"message", done.error->message}};
      print_json({{"type", "done"}, {"count", done.count}, {"error", error}});
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
  cmd.run = [&g, path] {
    return with_files(g, [&](actors::blocking_files& files) {
      auto st = files.stat(*path);
      if (!st)
        return report(g, st.error());
      if (g.json) {
        print_json({{"kind", std::string{to_string(st->kind)}},
                    {"size", st->size},
                    {"mtime_ns", st->mtime_ns},
                    {"dev", st->dev},
                    {"ino", st->ino},
                    {"version", st->version}});
      } else {
        write_fd(1, fmt::format("kind={} size={} mtime_ns={} dev={} ino={} "
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
