#pragma once

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

/// Which output stream a chunk came from.
enum class stream_kind : uint8_t { out, err };

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

/// Default cap on the retained stdout and stderr of one result (§9).
constexpr uint64_t default_output_cap = 16u << 20;

/// Options of one execution (§2).
struct exec_options {
  /// Zero means no limit.
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
};

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

/// "cgroup" or "process_group" (defined in cgroup.cpp).
std::string_view to_string(containment_mode x) noexcept;

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
