#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/system/result.hpp>

namespace sandbox {

/// The one error enum of sandbox (docs/api.md, "Errors"). Registered with
/// CAF as the error category "sandbox" so errors cross the network intact.
enum class errc : uint8_t {
  /// Not an error.
  none = 0,
  /// An input was malformed: a bad env name, language, path or option.
  invalid_argument,
  /// A path (file, directory or working directory) does not exist.
  path_not_found,
  /// A read was given a FIFO, device, socket or directory.
  not_a_regular_file,
  /// The operating system refused access.
  permission_denied,
  /// A compare-and-swap write found a newer version of the file.
  conflict,
  /// A request never produced a result in time (e.g. a remote deadline).
  timeout,
  /// A request was abandoned before it produced a result.
  aborted,
  /// The session was stopped; every later operation fails with this.
  session_stopped,
  /// No session with the given id exists.
  session_not_found,
  /// No TCP port could be leased, or the leased port is not bindable.
  port_unavailable,
  /// The operation is not supported by this provider.
  unsupported,
  /// Any other operating-system failure; the message names the syscall.
  io_error,
  /// A remote node or the connection to it is gone; the message names the
  /// node.
  node_unreachable,
  /// No long-lived process with the given id in the session
  /// (docs/processes.md); the message names it.
  process_not_found,
};

/// Returns the snake_case name of `x`, e.g. "path_not_found".
std::string_view to_string(errc x) noexcept;

/// Parses a name produced by `to_string`; returns false for unknown names.
bool from_string(std::string_view name, errc& x) noexcept;

/// An error of the domain core: a code plus a message for people that names
/// the offending input.
struct error {
  errc code = errc::none;
  std::string message;
};

/// Maps an errno value to the closest `errc` (ENOENT → path_not_found,
/// EACCES/EPERM → permission_denied, everything else → io_error).
errc errc_from_errno(int err) noexcept;

/// Builds an error from an errno value: "<what>: <strerror>".
error make_errno_error(int err, std::string_view what);

/// Result type of fallible functions in libsandbox.
template <class T>
using result = boost::system::result<T, error>;

/// Lets `result<T>::value()` throw when it holds an error.
[[noreturn]] void throw_exception_from_error(const error& e,
                                             const boost::source_location&);

/// The exception thrown by `result<T>::value()` on an error.
class exception : public std::exception {
public:
  explicit exception(error err) : err_(std::move(err)) {
  }
  const char* what() const noexcept override {
    return err_.message.c_str();
  }
  const sandbox::error& get() const noexcept {
    return err_;
  }

private:
  sandbox::error err_;
};

} // namespace sandbox
