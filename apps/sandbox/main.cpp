// sandbox: one CLI with subcommands (docs/cli.md).

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli.hpp"
#include "interrupt.hpp"
#include "sandbox/log.hpp"

#ifndef SANDBOX_VERSION
#  define SANDBOX_VERSION "unknown"
#endif

namespace {

using namespace sandbox::cli;

/// Global options that take a value (the next word, or after `=`).
constexpr const char* valued_globals[] = {
  "--node", "--log-level", "--session", "--tls-cert", "--tls-key", "--tls-ca"};

/// Levels of --log-level.
constexpr const char* log_levels[] = {"trace", "debug", "info",
                                      "warn",  "error", "off"};

template <class Range>
bool contains(const Range& r, const std::string& x) {
  return std::find(std::begin(r), std::end(r), x) != std::end(r);
}

/// A descriptor among 0-2 that is closed would be taken by the first
/// descriptor the CLI opens (an eventfd, say) and command output would go
/// there: each closed one is /dev/null instead.
void reopen_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF)
      // The lowest free descriptor: `fd` itself.
      (void) ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
}

/// The words before `--`: only those can be options.
size_t options_end(const std::vector<std::string>& args) {
  auto i = std::find(args.begin(), args.end(), "--");
  return static_cast<size_t>(i - args.begin());
}

/// Rewrites `--env A=1 B=2` into `--env A=1 --env B=2`: after its first
/// value, --env takes every following word of the form NAME=VALUE.
std::vector<std::string> expand_env(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  auto end = options_end(args);
  for (size_t i = 0; i < args.size(); ++i) {
    out.push_back(args[i]);
    if (i >= end || args[i] != "--env" || i + 1 >= end)
      continue;
    out.push_back(args[++i]);
    while (i + 1 < end) {
      auto& next = args[i + 1];
      auto eq = next.find('=');
      if (next.empty() || next[0] == '-' || eq == std::string::npos || eq == 0)
        break;
      out.push_back("--env");
      out.push_back(next);
      ++i;
    }
  }
  return out;
}

/// The words that name subcommands (skipping global options and their
/// values), up to `--`. Stops at an option it does not know (CLI11 then
/// reports it).
std::vector<std::string> command_words(const std::vector<std::string>& args) {
  std::vector<std::string> words;
  auto end = options_end(args);
  for (size_t i = 0; i < end; ++i) {
    auto& a = args[i];
    if (a.empty() || a[0] != '-' || a == "-") {
      words.push_back(a);
      // At most `session X` or `help session X`.
      auto most = words[0] == "help" ? 3u : words[0] == "session" ? 2u : 1u;
      if (words.size() >= most)
        break;
      continue;
    }
    if (contains(valued_globals, a))
      ++i;
    else if (a != "--json" && a.find('=') == std::string::npos)
      break;
  }
  return words;
}

/// The names of `app`'s subcommands, for messages.
std::string subcommand_names(const CLI::App& app) {
  std::string out;
  for (auto* sub : app.get_subcommands({})) {
    if (!out.empty())
      out += ", ";
    out += sub->get_name();
  }
  return out;
}

/// A CLI11 message as one line.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

/// Checks the subcommand words before CLI11 does, for clear messages.
/// Returns an exit status when the CLI is done (help, usage error).
std::optional<int>
check_words(CLI::App& app, const std::vector<std::string>& words, bool json) {
  if (words.empty())
    return std::nullopt; // --help, --version, or CLI11's own message
  auto* target = &app;
  bool help = words[0] == "help";
  std::vector<std::string> path{words.begin() + (help ? 1 : 0), words.end()};
  std::string prefix;
  for (auto& w : path) {
    CLI::App* sub = nullptr;
    try {
      sub = target->get_subcommand(w);
    } catch (const CLI::OptionNotFound&) {
    }
    if (sub == nullptr) {
      if (target != &app && target->get_subcommands({}).empty())
        break; // an argument, e.g. the id of `session stop`
      return usage_error(json,
                         fmt::format("unknown subcommand: {}{} (expected "
                                     "one of: {})",
                                     prefix, w, subcommand_names(*target)));
    }
    prefix += w + " ";
    target = sub;
  }
  if (help) {
    emit(1, target->help());
    return exit_ok;
  }
  return std::nullopt;
}

/// The first option of `app` or its subcommands given `--` as its value
/// (`--session -- run ...`): that `--` was meant to end the options, so the
/// value is missing. Empty when there is none.
std::string option_given_dashes(const CLI::App& app) {
  for (const auto* opt : app.get_options())
    for (auto& r : opt->nonpositional() ? opt->results() : CLI::results_t{})
      if (r == "--")
        return opt->get_name();
  for (const auto* sub : app.get_subcommands({}))
    if (auto name = option_given_dashes(*sub); !name.empty())
      return name;
  return {};
}

/// Whether the chosen subcommand creates sessions (every one but `session
/// list` and `session stop`).
bool creates_sessions(CLI::App& app) {
  auto* session = app.get_subcommand("session");
  return !session->parsed() || session->get_subcommand("create")->parsed();
}

/// Global options that would change nothing for the chosen subcommand
/// are usage errors: the TLS files secure a connection (--node, serve),
/// serve has no node or session to be pointed at, and the session
/// subcommands take no --session (`session stop` takes the id); only a
/// command that creates a session takes --isolation.
std::optional<int> check_scope(CLI::App& app, const global_options& g) {
  bool serving = app.get_subcommand("serve")->parsed();
  if (app.get_subcommand("session")->parsed() && !g.session.empty())
    return usage_error(g, "session: --session names the session of run, "
                          "code, the file subcommands, info, mcp and the "
                          "process subcommands; `session stop ID` takes the "
                          "id");
  bool tls = !g.tls_cert.empty() || !g.tls_key.empty() || !g.tls_ca.empty();
  if (tls && g.nodes.empty() && !serving)
    return usage_error(g, "--tls-cert, --tls-key and --tls-ca secure the "
                          "connection to a node: they need --node (or the "
                          "serve subcommand)");
  bool creates = creates_sessions(app);
  if (!g.isolation.empty() && (!g.session.empty() || !creates))
    return usage_error(g, "--isolation sets the isolation of the sessions a "
                          "command creates: it does nothing for an existing "
                          "session (--session), session list or session stop");
  if (!g.allow_net.empty() && (!g.session.empty() || !creates))
    return usage_error(g, "--allow-net sets the destinations of the "
                          "sessions a command creates: it does nothing for "
                          "an existing session (--session), session list or "
                          "session stop");
  if (auto limit = g.limit_text.first_given();
      !limit.empty() && (!g.session.empty() || !creates))
    return usage_error(g, fmt::format("{} limits the contained sessions a "
                                      "command creates: it does nothing for "
                                      "an existing session (--session), "
                                      "session list or session stop",
                                      limit));
  if ((!g.allow_read.empty() || !g.allow_write.empty())
      && (!g.session.empty() || !creates))
    return usage_error(g, "--allow-read and --allow-write set the view of the "
                          "sessions a command creates: they do nothing for "
                          "an existing session (--session), session list or "
                          "session stop");
  if (serving && (!g.nodes.empty() || !g.session.empty()))
    return usage_error(g,
                       fmt::format("serve: {} is for clients of a node",
                                   g.nodes.empty() ? "--session" : "--node"));
  return std::nullopt;
}

/// SANDBOX_ISOLATION (none or contained) stands for --isolation where that
/// is not given and the command creates sessions without --session; it is
/// ignored elsewhere (it is a default, not a request). Any other value is
/// a usage error naming the variable.
std::optional<int> isolation_from_env(CLI::App& app, global_options& g) {
  const char* v = std::getenv("SANDBOX_ISOLATION");
  if (v == nullptr || *v == '\0' || !g.isolation.empty() || !g.session.empty()
      || !creates_sessions(app))
    return std::nullopt;
  if (!sandbox::parse_isolation(v))
    return usage_error(g, fmt::format("SANDBOX_ISOLATION expects none or "
                                      "contained, got {}",
                                      v));
  g.isolation = v;
  return std::nullopt;
}

/// The limit options (docs/security.md, "Limits"), global like
/// --isolation: every command that creates sessions takes them.
void add_limit_options(CLI::App& app, global_options::limit_flags& f) {
  // An empty value is not "not given": it is refused, naming the option.
  auto note_empty = [&f](const char* name) {
    return [&f, name](const std::string& v) {
      if (v.empty() && f.given_empty.empty())
        f.given_empty = name;
    };
  };
  app
    .add_option("--memory", f.memory,
                "SIZE: memory of a contained session's processes together "
                "(e.g. 512M, 2G; default 2G; 0: none); serve: the node's "
                "default")
    ->each(note_empty("--memory"));
  app
    .add_option("--pids", f.pids,
                "N: processes of a contained session together (default "
                "512; 0: none)")
    ->each(note_empty("--pids"));
  app
    .add_option("--cpu", f.cpu,
                "SECONDS: CPU time of each process of a contained session "
                "(default 3600; 0: none)")
    ->each(note_empty("--cpu"));
  app
    .add_option("--tmp-size", f.tmp_size,
                "SIZE: the private /tmp and /dev/shm of a contained "
                "session, each (default 1G)")
    ->each(note_empty("--tmp-size"));
  app
    .add_option("--max-connections", f.max_connections,
                "N: connections the node forwards for a contained session "
                "at once (default 256; 0: none)")
    ->each(note_empty("--max-connections"));
}

/// Parses the limit flags into `g.limits`; a bad value is a usage error
/// naming the option. Limits are for contained sessions: for a session
/// that is not contained (--isolation none, or the embedded node's default)
/// they would do nothing, and say so. `serve` takes them whatever its
/// default: its clients may ask for contained sessions.
std::optional<int> limits_from_flags(CLI::App& app, global_options& g) {
  auto limits = parse_limits(g.limit_text);
  if (!limits)
    return usage_error(g, limits.error().message);
  g.limits = *limits;
  if (app.get_subcommand("serve")->parsed())
    return std::nullopt;
  bool embedded_none = g.nodes.empty() && g.isolation.empty();
  if (g.limits && (g.isolation == "none" || embedded_none))
    return usage_error(g, fmt::format("{} limits contained sessions: add "
                                      "--isolation contained",
                                      g.limit_text.first_given()));
  return std::nullopt;
}

} // namespace

int main(int argc, char** argv) {
  reopen_standard_descriptors();
  // Output errors are seen as EPIPE from write(2) and handled there.
  ::signal(SIGPIPE, SIG_IGN);
  install_interrupt_handling();
  CLI::App app{"sandbox: run commands, code and file operations in "
               "sessions, on this machine or a remote node",
               "sandbox"};
  app.require_subcommand(1);
  app.footer("`sandbox help SUBCOMMAND` shows a subcommand's options. Exit "
             "status: 0 ok, 1 error, 2 usage error; run and code: the "
             "command's.");
  global_options g;
  // Global options are accepted before or after the subcommand.
  app.fallthrough();
  app.set_version_flag("--version", "sandbox " SANDBOX_VERSION);
  app
    .add_option("--node", g.nodes,
                "HOST:PORT of a remote node; repeat it for several (new "
                "sessions go to the least loaded)")
    ->allow_extra_args(false);
  app.add_flag("--json", g.json, "print one JSON object per line (errors too)");
  app.add_option("--log-level", g.log_level,
                 "trace, debug, info, warn (default), error or off");
  app.add_option("--session", g.session, "id of a session on the node");
  app.add_option("--tls-cert", g.tls_cert,
                 "certificate (PEM) for mutual TLS with --node or in serve");
  app.add_option("--tls-key", g.tls_key,
                 "private key (PEM) for mutual TLS with --node or in serve");
  app.add_option("--tls-ca", g.tls_ca,
                 "CA certificates (PEM) for mutual TLS with --node or in "
                 "serve");
  app
    .add_option("--isolation", g.isolation,
                "none or contained: isolation of the sessions this command "
                "creates (serve: the node's default; when not given, "
                "$SANDBOX_ISOLATION); see docs/security.md")
    ->check(CLI::IsMember({"none", "contained"}));
  app
    .add_option("--allow-net", g.allow_net,
                "HOST:PORT a command of a contained session this command "
                "creates may connect to (repeatable; serve: the node's "
                "default); see docs/security.md")
    ->allow_extra_args(false);
  add_limit_options(app, g.limit_text);
  app
    .add_option("--allow-read", g.allow_read,
                "PATH of the host a command of a contained session this "
                "command creates may read (repeatable; serve: the node's "
                "default); see docs/security.md")
    ->allow_extra_args(false);
  app
    .add_option("--allow-write", g.allow_write,
                "PATH of the host a command of a contained session this "
                "command creates may write (repeatable; serve: the node's "
                "default); see docs/security.md")
    ->allow_extra_args(false);
  std::vector<command> commands;
  commands.push_back(add_run(app, g));
  commands.push_back(add_code(app, g));
  commands.push_back(add_read(app, g));
  commands.push_back(add_write(app, g));
  commands.push_back(add_rm(app, g));
  commands.push_back(add_ls(app, g));
  commands.push_back(add_stat(app, g));
  commands.push_back(add_session(app, g));
  commands.push_back(add_mcp(app, g));
  commands.push_back(add_serve(app, g));
  commands.push_back(add_info(app, g));
  commands.push_back(add_ps(app, g));
  commands.push_back(add_attach(app, g));
  commands.push_back(add_send(app, g));
  commands.push_back(add_kill(app, g));
  commands.push_back(add_resize(app, g));
  std::vector<std::string> args{argv + std::min(argc, 1), argv + argc};
  auto end = options_end(args);
  bool json = std::find(args.begin(), args.begin() + static_cast<long>(end),
                        "--json")
              != args.begin() + static_cast<long>(end);
  args = expand_env(args);
  int status = exit_error;
  if (auto done = check_words(app, command_words(args), json)) {
    status = *done;
  } else {
    std::reverse(args.begin(), args.end()); // CLI11 takes them reversed
    std::optional<int> parsed;
    try {
      app.parse(args);
    } catch (const CLI::CallForHelp&) {
      // The help of the subcommand that was asked for.
      CLI::App* target = &app;
      for (CLI::App* sub = &app; sub != nullptr;) {
        target = sub;
        auto chosen = sub->get_subcommands();
        sub = chosen.empty() ? nullptr : chosen.front();
      }
      emit(1, target->help());
      parsed = exit_ok;
    } catch (const CLI::CallForAllHelp&) {
      emit(1, app.help("", CLI::AppFormatMode::All));
      parsed = exit_ok;
    } catch (const CLI::CallForVersion& e) {
      emit(1, fmt::format("{}\n", e.what()));
      parsed = exit_ok;
    } catch (const CLI::ParseError& e) {
      // Named after the (sub)subcommand it is about: "session stop: ...".
      std::string prefix;
      CLI::App* target = &app;
      for (auto chosen = app.get_subcommands(); !chosen.empty();
           chosen = target->get_subcommands()) {
        target = chosen.front();
        prefix += target->get_name() + " ";
      }
      if (!prefix.empty())
        prefix.back() = ':', prefix += ' ';
      std::string message = e.what();
      if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr
          && !target->get_subcommands({}).empty()
          && target->get_subcommands().empty())
        message = fmt::format("a subcommand is required (one of: {}); see "
                              "sandbox help{}",
                              subcommand_names(*target),
                              target == &app ? "" : " " + target->get_name());
      parsed = usage_error(json, prefix + one_line(message));
    }
    if (!parsed)
      if (auto name = option_given_dashes(app); !name.empty())
        // Reported as the words before `--` asked (`--json` after it is not
        // an option).
        parsed = usage_error(json,
                             fmt::format("{} expects a value, got --", name));
    if (parsed) {
      status = *parsed;
    } else if (!contains(log_levels, g.log_level)) {
      status = usage_error(g, fmt::format("--log-level expects one of trace, "
                                          "debug, info, warn, error, off; "
                                          "got {}",
                                          g.log_level));
    } else {
      // Logs go to stderr (the library's logger): stdout carries command
      // output alone.
      spdlog::set_default_logger(sandbox::log::logger());
      spdlog::set_level(spdlog::level::from_str(g.log_level));
      if (auto bad = check_scope(app, g))
        status = *bad;
      else if (auto bad = isolation_from_env(app, g))
        status = *bad;
      else if (auto bad = limits_from_flags(app, g))
        status = *bad;
      else if (auto bad = check_tls(g))
        status = *bad;
      else
        for (auto& cmd : commands)
          if (cmd.sub->parsed())
            status = cmd.run();
    }
  }
  // An interrupt ended the command: 128 + its number; a failed write to
  // stdout/stderr: 141 or 1.
  if (int sig = interrupted_by(); sig != 0)
    status = 128 + sig;
  else
    status = output_status(status);
  // Exit without tearing down the actor system from a static destructor:
  // sessions were stopped by their commands already.
  std::_Exit(status);
}
