#include "sandbox/execution.hpp"

#include <fmt/format.h>

namespace sandbox {

std::string_view to_string(exit_reason x) noexcept {
  switch (x) {
    case exit_reason::exited:
      return "exited";
    case exit_reason::signalled:
      return "signalled";
    case exit_reason::timeout:
      return "timeout";
    case exit_reason::cancelled:
      return "cancelled";
    case exit_reason::stopped:
      return "stopped";
  }
  return "unknown";
}

std::string_view to_string(stream_kind x) noexcept {
  switch (x) {
    case stream_kind::out:
      return "stdout";
    case stream_kind::err:
      return "stderr";
    case stream_kind::pty:
      return "pty";
  }
  return "unknown";
}

std::string_view to_string(violation_kind x) noexcept {
  switch (x) {
    case violation_kind::none:
      return "none";
    case violation_kind::write_denied:
      return "write_denied";
    case violation_kind::read_denied:
      return "read_denied";
    case violation_kind::connect_denied:
      return "connect_denied";
    case violation_kind::memory_limit:
      return "memory_limit";
    case violation_kind::process_limit:
      return "process_limit";
    case violation_kind::cpu_limit:
      return "cpu_limit";
    case violation_kind::file_size_limit:
      return "file_size_limit";
    case violation_kind::signal_denied:
      return "signal_denied";
    case violation_kind::syscall_denied:
      return "syscall_denied";
    case violation_kind::connection_limit:
      return "connection_limit";
  }
  return "unknown";
}

std::string describe(const violation& v, violation_kind ended_by) {
  return fmt::format("{}: {}{}", to_string(v.kind), v.detail,
                     v.kind == ended_by ? " (ended the command)" : "");
}

std::string code_runner_script(std::string_view interpreter) {
  return fmt::format(
    "set -f; IFS=:; "
    "for d in $PATH; do "
    "if [ -f \"${{d:-.}}/{0}\" ] && [ -x \"${{d:-.}}/{0}\" ]; then "
    "exec \"${{d:-.}}/{0}\"; fi; "
    "done; "
    "printf 'Language interpreter not found: %s\\n' {0} >&2; exit {1}",
    interpreter, exit_code_not_found);
}

} // namespace sandbox
