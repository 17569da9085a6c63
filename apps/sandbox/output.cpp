// Output of the CLI: lines on stdout and stderr (and what happens when
// they cannot be written), errors, and bytes as text or base64.

#include "cli.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "sandbox/validation.hpp"

namespace sandbox::cli {

// -- output -------------------------------------------------------------------

namespace {

/// errno of the first failed write to fd 1 and fd 2 (0: none).
std::atomic<int> write_errors[3];

} // namespace

bool emit(int fd, std::string_view data) {
  if (write_errors[fd].load() != 0)
    return false;
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int expected = 0;
      write_errors[fd].compare_exchange_strong(expected, n < 0 ? errno : EIO);
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool output_failed() {
  return write_errors[1].load() != 0 || write_errors[2].load() != 0;
}

int output_status(int status) {
  for (int fd : {1, 2}) {
    auto err = write_errors[fd].load();
    if (err == 0)
      continue;
    if (err == EPIPE)
      return exit_broken_pipe;
    if (fd == 1)
      emit(2, fmt::format("sandbox: write stdout: {}\n", std::strerror(err)));
    return exit_error;
  }
  return status;
}

std::string json_line(const nlohmann::ordered_json& j) {
  return wire::line(j);
}

bool print_json(const nlohmann::ordered_json& j) {
  return emit(1, json_line(j) + '\n');
}

int report(const global_options& g, const sandbox::error& err) {
  if (g.json)
    print_json(wire::error_json(err));
  else
    emit(2, fmt::format("sandbox: {}\n", escape_control(err.message)));
  return exit_error;
}

int usage_error(bool json, std::string_view message) {
  if (json)
    print_json({{"type", "error"},
                {"code", "usage"},
                {"message", std::string{message}}});
  else
    emit(2, fmt::format("sandbox: {}\n", escape_control(message)));
  return exit_usage;
}

int usage_error(const global_options& g, std::string_view message) {
  return usage_error(g.json, message);
}

// -- text and bytes -----------------------------------------------------------

std::string escape_control(std::string_view text) {
  return escape(text, escape_style::control);
}

} // namespace sandbox::cli
