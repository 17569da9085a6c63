#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox {

/// Environment variables: name → value, sorted by name.
using env_map = std::map<std::string, std::string>;

/// Why an execution ended (§1).
enum class exit_reason : uint8_t {
  /// The child exited on its own; `exit_code` is its status.
  exited,
  /// The child was ended by a signal; `exit_code` is 128 + signo (§6).
  signalled,
  /// The timeout fired; `exit_code` is 124 (§5).
  timeout,
  /// The execution was cancelled; `exit_code` is 130 (§5).
  cancelled,
  /// The session was stopped while the execution ran (§22).
  stopped,
};

std::string_view to_string(exit_reason x) noexcept;

/// Which output stream a chunk came from: stdout, stderr, or the one
/// stream of a process on a terminal (docs/processes.md).
enum class stream_kind : uint8_t { out, err, pty };

/// "stdout", "stderr" or "pty".
std::string_view to_string(stream_kind x) noexcept;

/// A piece of a child's output as it arrived (§8: never splits a UTF-8
/// sequence of valid UTF-8 output).
struct output_chunk {
  stream_kind stream = stream_kind::out;
  std::string data;
};

/// Exit code reported for a timed-out execution (as `timeout(1)`).
constexpr int exit_code_timeout = 124;

/// Exit code reported for a cancelled execution (128 + SIGINT).
constexpr int exit_code_cancelled = 130;

/// Exit code of a missing interpreter (§7) or command (as sh).
constexpr int exit_code_not_found = 127;

/// The shell script that runs code with an interpreter (§7): the code
/// arrives on the script's stdin and is never seen by a shell parser.
/// `interpreter` names the interpreter inside the script: `$0` when the
/// language is passed as the script's $0, or a language already checked by
/// `validate_language` (such a name is a safe shell word, free of quotes,
/// `$`, `:` and blanks). The interpreter
/// must be an executable file on the execution's PATH (`command -v` would
/// also accept builtins and keywords such as `cd` or `if`, which cannot run
/// a program from stdin); otherwise the script prints
/// `Language interpreter not found: <language>` and exits with
/// `exit_code_not_found`.
std::string code_runner_script(std::string_view interpreter);

/// What a contained session refused or ended (docs/security.md): each is
/// reported on the execution's result and kept by its session.
enum class violation_kind : uint8_t {
  /// Nothing: the value of `exec_result::ended_by` when no limit ended it.
  none,
  /// A write, create, remove or rename outside the writable directories.
  write_denied,
  /// A read of a path the session denies.
  read_denied,
  /// A connection to a destination that is neither the session's own
  /// loopback nor allowed.
  connect_denied,
  /// The session's memory limit: the kernel killed a process of it.
  memory_limit,
  /// The session's process limit: a fork or clone was refused.
  process_limit,
  /// RLIMIT_CPU: a process used up its CPU time (SIGXCPU or SIGKILL).
  cpu_limit,
  /// RLIMIT_FSIZE: a process wrote past the file size limit (SIGXFSZ).
  file_size_limit,
  /// A signal, ptrace or pidfd aimed at a pid that is no process of the
  /// session (a host process, which it cannot name, or one already reaped).
  signal_denied,
  /// A system call a contained session refuses outright (EPERM): a terminal
  /// ioctl that injects input or reads the console (TIOCSTI, TIOCLINUX),
  /// `io_uring_setup`.
  syscall_denied,
  /// The session's cap on forwarded connections (`max_connections`): a
  /// connection beyond it was reset.
  connection_limit,
};

/// "none", "write_denied", "read_denied", "connect_denied", "memory_limit",
/// "process_limit", "cpu_limit", "file_size_limit", "signal_denied",
/// "syscall_denied" or "connection_limit".
std::string_view to_string(violation_kind x) noexcept;

/// One violation, tagged with the execution that caused it.
struct violation {
  violation_kind kind = violation_kind::none;
  /// The execution's number in its session (the `N` of `e-N` in the log);
  /// 0 for a file operation of the API.
  uint64_t execution = 0;
  /// What was refused or which limit: a path, `host:port`, or the limit
  /// and its value (`memory 67108864 bytes`).
  std::string detail;
};

/// `v` as one line of text, without a newline: `write_denied: /etc/x`, with
/// ` (ended the command)` when its kind is `ended_by`, the limit that ended
/// the execution. The CLI and the agent tools show violations so.
std::string describe(const violation& v, violation_kind ended_by);

/// Default cap on the retained stdout and stderr of one result (§9).
constexpr uint64_t default_output_cap = 16u << 20;

/// The largest `exec_options::timeout`: 1e9 s (about 31 years), the range
/// of the CLI's `--timeout`. A larger one is refused (its deadline could
/// overflow the clock and expire at once).
constexpr std::chrono::milliseconds max_exec_timeout{1'000'000'000'000};

/// Options of one execution (§2).
struct exec_options {
  /// Zero means no limit; 0 to `max_exec_timeout` (else `invalid_argument`).
  std::chrono::milliseconds timeout{0};
  /// Working directory; empty means the session working directory.
  std::string cwd;
  /// Merged over the session env (§4).
  env_map env;
  /// Caller-chosen key that `cancel` names; empty means not cancellable.
  std::string cancel_key;
  /// Retained bytes per stream (§9); zero means the session default.
  uint64_t output_cap = 0;
};

/// The one result that ends every execution (§1).
struct exec_result {
  int32_t exit_code = 0;
  exit_reason reason = exit_reason::exited;
  /// Retained output: head and tail with a marker between (§9).
  std::string stdout_data;
  std::string stderr_data;
  /// Files the execution produced for the caller; local sessions report none.
  std::vector<std::string> output_files;
  bool truncated = false;
  uint64_t dropped_bytes = 0;
  /// What the execution's processes were refused or hit (contained
  /// sessions only; at most `max_violations_per_result`, then counted in
  /// `violations_dropped`).
  std::vector<violation> violations;
  uint64_t violations_dropped = 0;
  /// The limit that ended the command, `none` when none did.
  violation_kind ended_by = violation_kind::none;
};

/// Violations one result carries at most.
constexpr size_t max_violations_per_result = 64;

/// How a node holds the process trees of its sessions.
enum class containment_mode : uint8_t {
  /// Each session has a cgroup v2 below the node's own, each execution a
  /// child cgroup its processes are born in. Ending a tree is `cgroup.kill`,
  /// confirmed by `cgroup.events`: nothing escapes, whatever it does with
  /// `setsid`, its environment or its parents.
  cgroup,
  /// Fallback: each child leads a process group, descendants carry the
  /// marker variable, and the node is a child subreaper. A descendant that
  /// leaves the group and clears the marker is not seen.
  process_group,
};

/// "cgroup" or "process_group" (defined in src/cgroup/cgroup.cpp).
std::string_view to_string(containment_mode x) noexcept;

/// Stopping is staged data (as reproc's stop actions): send `first` to every
/// member, wait up to `grace` for them to exit, then SIGKILL what is left and
/// verify that nothing survived.
struct stop_plan {
  int first = SIGTERM;
  std::chrono::milliseconds grace{1000};
  /// How long to wait for SIGKILLed processes to disappear before counting
  /// them as survivors.
  std::chrono::milliseconds verify{2000};
  /// How often membership is checked while waiting, at most: the first
  /// checks of a stage come sooner (250 µs after the signal, then twice as
  /// long each time), as processes usually end within a millisecond.
  std::chrono::milliseconds poll{5};
};

/// What `stop` reports (§22).
struct stop_receipt {
  /// Processes (children and descendants) that were running and got ended.
  uint32_t ended = 0;
  /// How many of those ignored SIGTERM and needed SIGKILL.
  uint32_t killed = 0;
  /// Processes of the session still alive after the stop, as far as
  /// `mode` can see: in the cgroup mode the kernel's count (`populated 0`
  /// of the session's cgroup), complete; in the process-group mode the
  /// members found by group, parentage and marker, so a descendant that
  /// left its group and cleared the marker is not counted.
  uint32_t survivors = 0;
  /// How the processes were found and ended.
  containment_mode mode = containment_mode::process_group;
};

} // namespace sandbox
