#pragma once

// Shared pieces of the `sandbox` CLI: global options, output in text or
// JSON lines (and what happens when it cannot be written), errors, option
// values, and the session a subcommand runs in.

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "sandbox/actors/remote.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/uuid.hpp"
#include "wire/json.hpp"

namespace sandbox::cli {

/// Options every subcommand accepts, before or after its name.
struct global_options {
  /// --node, repeatable: HOST:PORT of remote nodes.
  std::vector<std::string> nodes;
  bool json = false;
  std::string log_level = "warn";
  std::string session;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  /// --isolation: none or contained (empty: the node's default); for the
  /// sessions this invocation creates, and `serve`'s default. Where it is
  /// not given, SANDBOX_ISOLATION stands for it (main.cpp).
  std::string isolation;
  /// --allow-net HOST:PORT (repeatable): destinations commands of the
  /// contained sessions this invocation creates may connect to; `serve`'s
  /// default.
  std::vector<std::string> allow_net;
  /// --memory SIZE, --pids N, --cpu SECONDS, --tmp-size SIZE,
  /// --max-connections N as given (empty: not given): limits of the
  /// contained sessions this invocation creates; `serve`'s default.
  struct limit_flags {
    std::string memory;
    std::string pids;
    std::string cpu;
    std::string tmp_size;
    std::string max_connections;
    /// The first of them given with an empty value (empty: none).
    std::string given_empty;
    /// The first flag given, e.g. "--pids" (empty: none).
    std::string first_given() const;
  } limit_text;
  /// What `limit_text` makes (`parse_limits`); unset when no limit flag was
  /// given.
  std::optional<isolation_limits> limits;
  /// --allow-read PATH / --allow-write PATH (repeatable): host paths the
  /// view of the contained sessions this invocation creates shows
  /// read-only / writable; `serve`'s default.
  std::vector<std::string> allow_read;
  std::vector<std::string> allow_write;
};

/// The limits of `flags`: `actors::default_contained_limits()` with the
/// given ones replaced; unset when none is given. Errors (usage) name the
/// option and the value.
result<std::optional<isolation_limits>>
parse_limits(const global_options::limit_flags& flags);

/// Parses a size in bytes: digits with an optional binary suffix K, M, G
/// or T (either case, optionally followed by "iB" or "B"): 512M, 2G, 1048576.
/// Errors (usage) name the option and the value.
result<uint64_t> parse_size(std::string_view option, const std::string& text);

/// Sets `cfg.isolation` from --isolation (validated by the parser),
/// `cfg.allow_net` from --allow-net, `cfg.allow_read` and `allow_write`
/// from --allow-read and --allow-write (checked by the node) and
/// `cfg.limits` from the limit flags (parsed by main).
void apply_isolation(const global_options& g, actors::session_config& cfg);

/// Exit statuses of the CLI (docs/cli.md).
constexpr int exit_ok = 0;
constexpr int exit_error = 1;
constexpr int exit_usage = 2;
/// stdout or stderr was a pipe whose reader went away (128 + SIGPIPE).
constexpr int exit_broken_pipe = 141;

/// The cancel key of the one command a CLI process runs: `cli-<uuid>`,
/// made once per process, so that CLIs running in one session at the same
/// time never claim the same key.
inline const std::string& cli_cancel_key() {
  static const std::string key = "cli-" + make_uuid_v4();
  return key;
}

/// The global options' help, shown below every subcommand's own.
extern const char* const global_options_footer;

// -- output -------------------------------------------------------------------

/// Writes all of `data` to `fd` (1 or 2). Returns false when it could not:
/// the first failure of each descriptor is remembered (see
/// `output_status`) and later writes to it are dropped.
bool emit(int fd, std::string_view data);

/// Whether a write to stdout or stderr failed.
bool output_failed();

/// The exit status once the work is done: `status`, unless a write to
/// stdout/stderr failed: then 141 for a closed pipe (quietly), else one
/// error line on stderr (`sandbox: write stdout: ...`) and 1.
int output_status(int status);

/// One JSON object as a line (no trailing newline); invalid UTF-8 in a
/// string becomes U+FFFD (callers carry such bytes as base64 beside it).
std::string json_line(const nlohmann::ordered_json& j);

/// Prints one JSON object as a line on stdout.
bool print_json(const nlohmann::ordered_json& j);

/// Prints an error (one line on stderr, control characters escaped, or a
/// JSON error object on stdout with --json) and returns `exit_error`.
int report(const global_options& g, const sandbox::error& err);

/// Prints a usage error like `report` (code "usage" in JSON) and returns
/// `exit_usage`.
int usage_error(bool json, std::string_view message);
int usage_error(const global_options& g, std::string_view message);

// -- text and bytes -----------------------------------------------------------

// Bytes as text or base64, and the JSON shapes: the wire library's.
using wire::base64;
using wire::is_utf8;
using wire::put_bytes;
using wire::put_path;

/// `text` with backslash and control characters escaped (`\\`, `\n`, `\t`,
/// `\xNN`), so that it stays on one line; other bytes are kept.
std::string escape_control(std::string_view text);

// -- input ------------------------------------------------------------------

/// Reads from `fd` until `buf` (its current size) is full or the input
/// ends, or, when `whole` is false, until a read returned something;
/// returns how many bytes it holds. `what` names the input in errors.
result<size_t> read_full(int fd, std::string& buf, std::string_view what,
                         bool whole = true);

// -- option values ------------------------------------------------------------

/// Parses "K=V"; the name must be valid. Errors (usage) name the entry.
result<std::pair<std::string, std::string>>
parse_env_entry(const std::string& entry);

/// The largest --timeout, in seconds: the library's `max_exec_timeout`.
constexpr double max_timeout_seconds
  = std::chrono::duration<double>(max_exec_timeout).count();

/// Parses --timeout: seconds from 0 to `max_timeout_seconds`, fractions
/// allowed; 0 means none. Errors (usage) name the option and the range.
result<std::chrono::milliseconds> parse_timeout(const std::string& text);

/// As `parse_timeout`, for the option named `option`.
result<std::chrono::milliseconds> parse_seconds(std::string_view option,
                                                const std::string& text);

/// Parses a decimal integer option in [lo, hi]. Errors (usage) name the
/// option and the range.
result<uint64_t> parse_integer(std::string_view option, const std::string& text,
                               uint64_t lo, uint64_t hi);

// -- sessions -----------------------------------------------------------------

/// The TLS settings of the --tls-* flags.
actors::tls_config tls_of(const global_options& g);

/// Checks the --node addresses (usage errors) and the --tls-* flags before
/// anything starts: all three or none
/// (else a usage error, exit 2), readable files whose key matches the
/// certificate (else an error line, exit 1). Returns the exit status when
/// they are not usable.
std::optional<int> check_tls(const global_options& g);

/// The remote nodes of --node, connected once (nodes that cannot be reached
/// are skipped when another one answers).
result<actors::node_pool*> remote_nodes(const global_options& g);

/// The session a command works in and whether the caller stops it.
struct acquired_session {
  actors::blocking_session session;
  bool owned = true;
};

/// With --session ID, that persistent session of a remote node (not
/// owned); otherwise a fresh session (owned) on the least loaded node of
/// --node, or on the embedded node, with `cfg` (an empty working
/// directory: a new directory under the node's base directory, or the
/// current directory on the embedded node).
result<acquired_session> acquire_session(const global_options& g,
                                         actors::session_config cfg);

/// Runs `body` with a session to work in: without --node, an ephemeral
/// session whose working directory is the current directory (stopped on
/// return); with --node, the session named by --session, or an ephemeral
/// one on the least loaded node (working directory under the node's base
/// directory, stopped on return). Returns the exit status. With
/// `runs_commands`, an interrupt from the start of `body` to the end of the
/// stop never ends the CLI early: the stop ends whatever the command left
/// (`body` cancels the command itself).
int with_session(const global_options& g,
                 const std::function<int(actors::blocking_session&)>& body,
                 bool runs_commands = false);

/// A non-blocking pipe whose read end wakes a loop that polls it (an
/// interrupt, a window resized, the end of a command); both ends close with
/// it. `wake` may run in a signal handler.
struct wake_pipe {
  int fds[2] = {-1, -1};
  wake_pipe() {
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
      fds[0] = fds[1] = -1;
  }
  ~wake_pipe() {
    for (int fd : fds)
      if (fd >= 0)
        ::close(fd);
  }
  wake_pipe(const wake_pipe&) = delete;
  wake_pipe& operator=(const wake_pipe&) = delete;
  void wake() const {
    if (fds[1] >= 0)
      (void) !::write(fds[1], "x", 1);
  }
};

/// The node every subcommand without --node uses.
actors::embedded_node& embedded();

/// A subcommand: adds itself to `app`; `run` is called when it was chosen.
struct command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

command add_run(CLI::App& app, global_options& g);
command add_code(CLI::App& app, global_options& g);
command add_read(CLI::App& app, global_options& g);
command add_write(CLI::App& app, global_options& g);
command add_rm(CLI::App& app, global_options& g);
command add_ls(CLI::App& app, global_options& g);
command add_stat(CLI::App& app, global_options& g);
command add_session(CLI::App& app, global_options& g);
command add_mcp(CLI::App& app, global_options& g);
command add_serve(CLI::App& app, global_options& g);
command add_info(CLI::App& app, global_options& g);
command add_ps(CLI::App& app, global_options& g);
command add_attach(CLI::App& app, global_options& g);
command add_send(CLI::App& app, global_options& g);
command add_kill(CLI::App& app, global_options& g);

command add_resize(CLI::App& app, global_options& g);

/// The check of `--rows` and `--cols`: 1 to `actors::max_terminal_side`.
inline CLI::Range terminal_side() {
  return CLI::Range(1, static_cast<int>(actors::max_terminal_side));
}

/// `run --detach`: starts `command` as a process of --session's session
/// and prints its id (docs/processes.md).
int run_detached(const global_options& g, const std::string& command,
                 const actors::process_options& popts);

/// `run --tty` without --detach: runs `command` on a terminal connected to
/// the CLI's (raw mode; the window's size followed unless `size_given`);
/// the exit status is the command's.
int run_terminal(const global_options& g, const std::string& command,
                 actors::process_options popts, bool size_given);

/// Runs `body` in --session's session; a usage error naming `name`
/// without --session.
int with_existing_session(
  const global_options& g, std::string_view name,
  const std::function<int(actors::blocking_session&)>& body);

/// Writes process `id`'s output from `offset` as `attach` does (chunks to
/// stdout and stderr, or JSON lines; a gap said once) until it has ended,
/// or, without `follow`, until nothing more is there. Returns the exit
/// status: the process's, or 0 when not following.
int write_output(const global_options& g, actors::blocking_session& s,
                 const std::string& id, uint64_t offset, bool follow);

using wire::process_json;

} // namespace sandbox::cli
