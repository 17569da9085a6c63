#include "sandbox/execution.hpp"

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
  return x == stream_kind::out ? "stdout" : "stderr";
}

} // namespace sandbox
