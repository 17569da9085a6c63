// Long-lived processes from the CLI (docs/processes.md, docs/cli.md
// "Processes"): `run --detach` starts one, `ps` lists them, `attach` writes
// a process's output from an offset and follows it, `send` copies the
// CLI's stdin to the process's, `kill` signals it. All need --session: a
// session of a remote node, which outlives the CLI. Terminals:
// cmd_terminal.cpp.

#include <signal.h>
#include <string.h>

#include <cstdio>

#include <fmt/format.h>

#include "cli.hpp"

namespace sandbox::cli {

namespace {

/// `send` copies this much of the CLI's stdin at a time.
constexpr size_t send_chunk = 64 * 1024;

/// `attach` reads at most this much per request.
constexpr uint64_t attach_chunk = 1 << 20;

/// A follow waits this long per read for more output (the read answers as
/// soon as some comes).
constexpr auto follow_wait = std::chrono::seconds{30};

/// A signal by name (TERM, SIGTERM, term) or number.
result<int> parse_signal(const std::string& text) {
  auto sig = sandbox::parse_signal(text);
  if (!sig)
    return error{errc::invalid_argument, "--signal: " + sig.error().message};
  return sig;
}

} // namespace

/// Runs `body` in --session's session; a usage error without --session.
int with_existing_session(
  const global_options& g, std::string_view name,
  const std::function<int(actors::blocking_session&)>& body) {
  if (g.session.empty())
    return usage_error(
      g, fmt::format("{}: needs --session ID, a session of a remote node "
                     "(--node) that outlives the CLI (sandbox session "
                     "create)",
                     name));
  auto acquired = acquire_session(g, {});
  if (!acquired)
    return report(g, acquired.error());
  return body(acquired->session);
}

command add_ps(CLI::App& app, global_options& g) {
  command cmd;
  cmd.sub = app.add_subcommand("ps", "list the processes of --session's "
                                     "session, running and exited");
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g] {
    return with_existing_session(g, "ps", [&](actors::blocking_session& s) {
      auto l = s.processes();
      if (!l)
        return report(g, l.error());
      for (auto& p : *l) {
        if (g.json)
          print_json(process_json(p, g.session));
        else
          emit(1,
               fmt::format("{} {} {} {}\n", p.id,
                           p.running ? std::string{"running"}
                                     : fmt::format("exited({})", p.exit_code),
                           p.next_offset, p.command));
      }
      return output_status(exit_ok);
    });
  };
  return cmd;
}

int write_output(const global_options& g, actors::blocking_session& s,
                 const std::string& id, uint64_t offset, bool follow) {
  for (;;) {
    auto wait = follow ? std::chrono::duration_cast<std::chrono::milliseconds>(
                  follow_wait)
                       : std::chrono::milliseconds{0};
    auto r = s.read_process(id, offset, wait, attach_chunk);
    if (!r)
      return report(g, r.error());
    if (r->gap > 0) {
      if (g.json)
        print_json({{"type", "gap"}, {"bytes", r->gap}, {"offset", offset}});
      else
        std::fprintf(stderr,
                     "sandbox: %llu bytes of output before offset %llu "
                     "were no longer kept\n",
                     static_cast<unsigned long long>(r->gap),
                     static_cast<unsigned long long>(r->offset));
    }
    auto at = r->offset;
    for (auto& c : r->chunks) {
      bool ok;
      if (g.json) {
        nlohmann::ordered_json j{
          {"type", "chunk"}, {"stream", to_string(c.stream)}, {"offset", at}};
        put_bytes(j, c.data);
        ok = print_json(j);
      } else {
        ok = emit(c.stream == stream_kind::err ? 2 : 1, c.data);
      }
      if (!ok)
        return output_status(exit_error);
      at += c.data.size();
    }
    offset = r->next_offset;
    bool empty = r->next_offset == r->offset;
    if (!r->running && empty) {
      if (g.json)
        print_json({{"type", "result"},
                    {"exit_code", r->exit_code},
                    {"exit_reason", std::string{to_string(r->reason)}},
                    {"next_offset", offset}});
      return output_status(r->exit_code);
    }
    if (!follow && empty) {
      if (g.json)
        print_json({{"type", "detached"}, {"next_offset", offset}});
      return output_status(exit_ok);
    }
  }
}

command add_attach(CLI::App& app, global_options& g) {
  struct flags {
    std::string id;
    std::string from;
    bool from_start = false;
    bool no_follow = false;
  };
  auto f = std::make_shared<flags>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "attach", "write a process's output from an offset and follow it until "
              "it ends; the exit status is the process's (SIGINT detaches, "
              "the process runs on)");
  cmd.sub->add_option("id", f->id, "the process id, e.g. p-1")->required();
  cmd.sub->add_option("--from", f->from,
                      "the offset to start at (default: the oldest byte "
                      "still kept)");
  cmd.sub->add_flag("--from-start", f->from_start,
                    "start at offset 0 (bytes no longer kept are reported "
                    "as a gap)");
  cmd.sub->add_flag("--no-follow", f->no_follow,
                    "write what is there and exit 0, without waiting");
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, f] {
    if (!f->from.empty() && f->from_start)
      return usage_error(g, "attach: --from and --from-start exclude each "
                            "other");
    uint64_t offset = 0;
    bool from_oldest = f->from.empty() && !f->from_start;
    if (!f->from.empty()) {
      auto n = parse_integer("--from", f->from, 0, UINT64_MAX);
      if (!n)
        return usage_error(g, n.error().message);
      offset = *n;
    }
    return with_existing_session(g, "attach", [&](actors::blocking_session& s) {
      if (from_oldest) {
        auto info = s.wait_process(f->id, std::chrono::milliseconds{0});
        if (!info)
          return report(g, info.error());
        offset = info->retained_from;
      }
      return write_output(g, s, f->id, offset, !f->no_follow);
    });
  };
  return cmd;
}

command add_send(CLI::App& app, global_options& g) {
  auto id = std::make_shared<std::string>();
  auto eof = std::make_shared<bool>(false);
  command cmd;
  cmd.sub = app.add_subcommand(
    "send", "copy the CLI's stdin to a process's stdin (started with run "
            "--detach --stdin)");
  cmd.sub->add_option("id", *id, "the process id, e.g. p-1")->required();
  cmd.sub->add_flag("--eof", *eof,
                    "close the process's stdin after the CLI's ends");
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, id, eof] {
    return with_existing_session(g, "send", [&](actors::blocking_session& s) {
      std::string buf;
      for (;;) {
        buf.resize(send_chunk);
        auto n = read_full(0, buf, "stdin", false);
        if (!n)
          return report(g, n.error());
        if (*n == 0)
          break;
        buf.resize(*n);
        if (auto w = s.write_process(*id, std::move(buf)); !w)
          return report(g, w.error());
        buf = std::string{};
      }
      if (*eof)
        if (auto c = s.close_process_stdin(*id); !c)
          return report(g, c.error());
      return exit_ok;
    });
  };
  return cmd;
}

command add_kill(CLI::App& app, global_options& g) {
  auto id = std::make_shared<std::string>();
  auto signal = std::make_shared<std::string>("TERM");
  command cmd;
  cmd.sub = app.add_subcommand(
    "kill", "send a signal to a process and every process it started");
  cmd.sub->add_option("id", *id, "the process id, e.g. p-1")->required();
  cmd.sub->add_option("--signal,-s", *signal,
                      "a name (TERM, KILL, INT, HUP, ...) or a number; "
                      "default TERM");
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, id, signal] {
    auto sig = parse_signal(*signal);
    if (!sig)
      return usage_error(g, sig.error().message);
    return with_existing_session(g, "kill", [&](actors::blocking_session& s) {
      if (auto k = s.kill_process(*id, *sig); !k)
        return report(g, k.error());
      return exit_ok;
    });
  };
  return cmd;
}

} // namespace sandbox::cli
