// `sandbox run` and `sandbox code`: run a command or code in a session,
// streaming its output as it arrives; the exit status is the command's.

#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "cli.hpp"
#include "interrupt.hpp"
#include "sandbox/validation.hpp"

namespace sandbox::cli {

namespace {

/// `code` sends its source to the interpreter this much at a time.
constexpr size_t code_chunk = 64 * 1024;

/// Options shared by run and code.
struct exec_flags {
  std::string timeout = "0";
  std::string cwd;
  std::vector<std::string> env;
};

void add_exec_flags(CLI::App* sub, exec_flags& f) {
  sub->add_option("--timeout", f.timeout,
                  fmt::format("seconds before the command is ended, from 0 "
                              "(none, the default) to {:.0f}; fractions "
                              "allowed; exit status 124",
                              max_timeout_seconds));
  sub->add_option("--cwd", f.cwd,
                  "working directory, relative to the session's");
  sub
    ->add_option("--env", f.env,
                 "NAME=VALUE added to the environment; repeat it or give "
                 "several (they end at the first word without '=')")
    ->allow_extra_args(false);
  sub->footer(global_options_footer);
}

/// Checks the flags (usage errors) and builds the options.
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
  opts.cancel_key = cli_cancel_key();
  return opts;
}

/// Streams chunks to our stdout/stderr (or as JSON lines) and maps the
/// result to the exit status. When our output cannot be written (a closed
/// pipe, a full disk), the command is cancelled: nobody would see more.
int stream_and_exit(
  const global_options& g, actors::blocking_session& s,
  const std::function<result<exec_result>(const actors::chunk_callback&)>&
    start) {
  interrupt_guard guard{[&s] { (void) s.cancel(cli_cancel_key()); }};
  // Interrupted before the guard: nothing is started.
  if (interrupted_by() != 0)
    return exit_error;
  bool cancelled = false;
  auto r = start([&](const output_chunk& c) {
    if (output_failed())
      return;
    bool ok;
    if (g.json) {
      ok = print_json(wire::chunk_json(c));
    } else {
      ok = emit(c.stream == stream_kind::err ? 2 : 1, c.data);
    }
    if (!ok && !cancelled) {
      cancelled = true;
      (void) s.cancel(cli_cancel_key());
    }
  });
  if (!r)
    return report(g, r.error());
  if (g.json) {
    print_json(wire::result_json(*r, false));
  } else {
    // What a contained session refused or which limit it hit goes to our
    // stderr after the command's own output.
    for (auto& v : r->violations)
      std::fprintf(stderr, "sandbox: %s\n", describe(v, r->ended_by).c_str());
  }
  return r->exit_code;
}

/// What the thread feeding the interpreter's stdin reports back.
struct feed_state {
  std::mutex mtx;
  std::optional<sandbox::error> failure;
};

/// Copies `fd` to the process's stdin, one read at a time (each waits
/// until the pipe took it), then closes it.
void feed(int fd, std::string name, actors::blocking_process p,
          std::shared_ptr<feed_state> st) {
  std::string buf;
  for (;;) {
    buf.resize(code_chunk);
    // What a read returns goes on at once: the interpreter may run the
    // first lines while the rest is still being typed or produced.
    auto n = read_full(fd, buf, name, false);
    if (!n) {
      std::lock_guard<std::mutex> guard{st->mtx};
      st->failure = n.error();
      break;
    }
    if (*n == 0)
      break;
    buf.resize(*n);
    // Fails once the interpreter is gone: the rest is not wanted.
    if (!p.write_stdin(std::move(buf)))
      break;
    buf = std::string{};
  }
  (void) p.close_stdin();
  if (fd != 0)
    ::close(fd);
}

std::string join_words(const std::vector<std::string>& words) {
  std::string command;
  for (auto& w : words) {
    if (!command.empty())
      command += ' ';
    command += w;
  }
  return command;
}

} // namespace

command add_run(CLI::App& app, global_options& g) {
  auto flags = std::make_shared<exec_flags>();
  auto words = std::make_shared<std::vector<std::string>>();
  auto detach = std::make_shared<bool>(false);
  auto open_stdin = std::make_shared<bool>(false);
  struct terminal_flags {
    bool tty = false;
    int rows = 0;
    int cols = 0;
  };
  auto term = std::make_shared<terminal_flags>();
  auto retain = std::make_shared<std::string>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "run", "run a shell command (/bin/sh -c; its stdin is /dev/null); the "
           "exit status is the command's");
  add_exec_flags(cmd.sub, *flags);
  cmd.sub->add_flag("--detach", *detach,
                    "start the command as a process of --session's session "
                    "and print its id at once; it runs on after the CLI "
                    "(see ps, attach, send, kill)");
  cmd.sub->add_flag("--stdin", *open_stdin,
                    "with --detach: keep the process's stdin open for send");
  cmd.sub->add_option("--retain", *retain,
                      "with --detach: bytes of output the node keeps for "
                      "attach (the newest; default 1 MiB, at most 64 MiB)");
  cmd.sub->add_flag("--tty,-t", term->tty,
                    "run the command on a terminal of its own: connected to "
                    "the CLI's (raw mode, the window's size followed; the "
                    "exit status is the command's), or with --detach for "
                    "attach, send and resize");
  cmd.sub
    ->add_option("--rows", term->rows,
                 "with --tty: the terminal's rows, 1 to 10000 "
                 "(default: the CLI's window's, else 24)")
    ->check(terminal_side());
  cmd.sub
    ->add_option("--cols", term->cols,
                 "with --tty: the terminal's columns, 1 to 10000 "
                 "(default: the CLI's window's, else 80)")
    ->check(terminal_side());
  cmd.sub
    ->add_option("command", *words,
                 "the command; words after -- are joined with spaces")
    ->required();
  cmd.run = [&g, flags, words, detach, open_stdin, term, retain] {
    auto opts = to_options(*flags);
    if (!opts)
      return usage_error(g, opts.error().message);
    auto command = join_words(*words);
    if (!retain->empty() && !*detach)
      return usage_error(g, "run: --retain needs --detach");
    uint64_t retain_bytes = 0;
    if (!retain->empty()) {
      auto n = parse_integer("--retain", *retain, 1,
                             actors::max_process_retain);
      if (!n)
        return usage_error(g, n.error().message);
      retain_bytes = *n;
    }
    if (*open_stdin && !*detach)
      return usage_error(g, "run: --stdin needs --detach (a run's stdin is "
                            "/dev/null)");
    bool size_given = term->rows > 0 || term->cols > 0;
    if (size_given && !term->tty)
      return usage_error(g, "run: --rows and --cols need --tty");
    actors::process_options popts;
    popts.exec = *opts;
    popts.open_stdin = *open_stdin;
    popts.retain = retain_bytes;
    popts.tty = term->tty;
    popts.rows = static_cast<uint16_t>(term->rows > 0 ? term->rows : 24);
    popts.cols = static_cast<uint16_t>(term->cols > 0 ? term->cols : 80);
    if (*detach)
      return run_detached(g, command, popts);
    if (term->tty) {
      if (g.json)
        return usage_error(g, "run: --tty without --detach connects the "
                              "terminal as it is; --json does not apply "
                              "(with --detach, attach --json reads it)");
      return run_terminal(g, command, popts, size_given);
    }
    return with_session(
      g,
      [&](actors::blocking_session& s) {
        return stream_and_exit(g, s, [&](const actors::chunk_callback& cb) {
          return s.execute_streaming(command, *opts, cb);
        });
      },
      true);
  };
  return cmd;
}

command add_code(CLI::App& app, global_options& g) {
  auto flags = std::make_shared<exec_flags>();
  auto language = std::make_shared<std::string>();
  auto file = std::make_shared<std::string>("-");
  command cmd;
  cmd.sub = app.add_subcommand(
    "code", "run code with an interpreter (python3, node, sh, ...): the "
            "code (FILE, or the CLI's stdin) streams to the interpreter's "
            "stdin");
  add_exec_flags(cmd.sub, *flags);
  cmd.sub->add_option("--language,-l", *language, "interpreter to use")
    ->required();
  cmd.sub->add_option("file", *file,
                      "file with the code, - for stdin (the default); a "
                      "FIFO waits for its writer (Ctrl-C ends the wait)");
  cmd.run = [&g, flags, language, file] {
    auto opts = to_options(*flags);
    if (!opts)
      return usage_error(g, opts.error().message);
    // Opened before the session: a FIFO without a writer blocks here,
    // where an interrupt simply ends the CLI.
    int fd = *file == "-" ? 0 : ::open(file->c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return report(g, make_errno_error(errno,
                                        fmt::format("cannot open {}",
                                                    quote_for_message(*file))));
    auto name = *file == "-" ? std::string{"stdin"} : quote_for_message(*file);
    auto st = std::make_shared<feed_state>();
    auto status = with_session(
      g,
      [&](actors::blocking_session& s) {
        return stream_and_exit(g, s, [&](const actors::chunk_callback& cb) {
          return s.execute_code_streaming(
            *language, *opts,
            [&](actors::blocking_process p) {
              // Detached: it may sit in a read of a terminal after the
              // interpreter ended; the CLI exits without waiting for it.
              std::thread{feed, fd, name, std::move(p), st}.detach();
            },
            cb);
        });
      },
      true);
    std::lock_guard<std::mutex> guard{st->mtx};
    if (st->failure)
      return report(g, *st->failure);
    return status;
  };
  return cmd;
}

} // namespace sandbox::cli
