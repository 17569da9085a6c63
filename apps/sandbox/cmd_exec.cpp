// `sandbox run` and `sandbox code`: run a command or code in a session,
// streaming its output as it arrives; the exit status is the command's.

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "cli.hpp"
#include "interrupt.hpp"

namespace sandbox::cli {

namespace {

/// Options shared by run and code.
struct exec_flags {
  double timeout = 0;
  std::string cwd;
  std::vector<std::string> env;
};

void add_exec_flags(CLI::App* sub, exec_flags& f) {
  sub->add_option("--timeout", f.timeout,
                  "seconds before the command is ended (fractions allowed; "
                  "exit status 124)");
  sub->add_option("--cwd", f.cwd,
                  "working directory, relative to the session's");
  sub->add_option("--env", f.env, "K=V added to the environment")
    ->allow_extra_args(false);
}

result<exec_options> to_options(const exec_flags& f) {
  exec_options opts;
  auto t = parse_timeout(f.timeout);
  if (!t)
    return t.error();
  opts.timeout = *t;
  opts.cwd = f.cwd;
  for (auto& entry : f.env) {
    auto kv = parse_env_entry(entry);
    if (!kv)
      return kv.error();
    opts.env[kv->first] = kv->second;
  }
  opts.cancel_key = "cli";
  return opts;
}

/// Streams chunks to our stdout/stderr (or as JSON lines) and maps the
/// result to the exit status.
int stream_and_exit(const global_options& g, actors::blocking_session& s,
                    const std::function<result<exec_result>(
                      const actors::chunk_callback&)>& start) {
  interrupt_guard guard{[&s] { (void) s.cancel("cli"); }};
  auto r = start([&g](const output_chunk& c) {
    if (g.json) {
      nlohmann::ordered_json j{{"type", "chunk"}, {"stream", to_string(c.stream)}};
      put_bytes(j, c.data);
      print_json(j);
    } else {
      write_fd(c.stream == stream_kind::out ? 1 : 2, c.data);
    }
  });
  if (!r)
    return report(g, r.error());
  if (g.json)
    print_json({{"type", "result"},
                {"exit_code", r->exit_code},
                {"exit_reason", std::string{to_string(r->reason)}},
                {"truncated", r->truncated},
                {"dropped_bytes", r->dropped_bytes}});
  return r->exit_code;
}

result<std::string> read_all(const std::string& file) {
  int fd = file == "-" ? 0 : ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return make_errno_error(errno, fmt::format("cannot open {}", file));
  std::string out;
  char buf[65536];
  for (;;) {
    auto n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      auto err = errno;
      if (fd != 0)
        ::close(fd);
      return make_errno_error(err, fmt::format("cannot read {}", file));
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  if (fd != 0)
    ::close(fd);
  return out;
}

} // namespace

command add_run(CLI::App& app, global_options& g) {
  auto flags = std::make_shared<exec_flags>();
  auto words = std::make_shared<std::vector<std::string>>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "run", "run a shell command; its exit status is the command's");
  add_exec_flags(cmd.sub, *flags);
  cmd.sub->add_option("command", *words,
                      "the command; words after -- are joined with spaces")
    ->required();
  cmd.run = [&g, flags, words] {
    auto opts = to_options(*flags);
    if (!opts)
      return report(g, opts.error());
    std::string command;
    for (auto& w : *words) {
      if (!command.empty())
        command += ' ';
      command += w;
    }
    return with_session(g, [&](actors::blocking_session& s) {
      return stream_and_exit(g, s, [&](const actors::chunk_callback& cb) {
        return s.execute_streaming(command, *opts, cb);
      });
    });
  };
  return cmd;
}

command add_code(CLI::App& app, global_options& g) {
  auto flags = std::make_shared<exec_flags>();
  auto language = std::make_shared<std::string>();
  auto file = std::make_shared<std::string>("-");
  command cmd;
  cmd.sub = app.add_subcommand(
    "code", "run code with an interpreter (python3, node, sh, ...)");
  add_exec_flags(cmd.sub, *flags);
  cmd.sub->add_option("--language,-l", *language, "interpreter to use")
    ->required();
  cmd.sub->add_option("file", *file, "file with the code, - for stdin");
  cmd.run = [&g, flags, language, file] {
    auto opts = to_options(*flags);
    if (!opts)
      return report(g, opts.error());
    auto code = read_all(*file);
    if (!code)
      return report(g, code.error());
    return with_session(g, [&](actors::blocking_session& s) {
      return stream_and_exit(g, s, [&](const actors::chunk_callback& cb) {
        return s.execute_code(*code, *language, *opts, cb);
      });
    });
  };
  return cmd;
}

} // namespace sandbox::cli
