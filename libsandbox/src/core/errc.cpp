#include "sandbox/errc.hpp"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace sandbox {

namespace {

constexpr std::string_view names[] = {
  "none",
  "invalid_argument",
  "path_not_found",
  "not_a_regular_file",
  "permission_denied",
  "conflict",
  "timeout",
  "aborted",
  "session_stopped",
  "session_not_found",
  "port_unavailable",
  "unsupported",
  "io_error",
  "node_unreachable",
  "process_not_found",
};

} // namespace

std::string_view to_string(errc x) noexcept {
  auto i = static_cast<size_t>(x);
  return i < std::size(names) ? names[i] : std::string_view{"unknown"};
}

bool from_string(std::string_view name, errc& x) noexcept {
  for (size_t i = 0; i < std::size(names); ++i) {
    if (names[i] == name) {
      x = static_cast<errc>(i);
      return true;
    }
  }
  return false;
}

errc errc_from_errno(int err) noexcept {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return errc::path_not_found;
    case EACCES:
    case EPERM:
    case EROFS:
    // A file made by an id the file system or an id-mapped mount cannot
    // represent (a contained session's directories, docs/security.md
    // "Identity"): a refusal of who asks, not a fault of the disk.
    case EOVERFLOW:
      return errc::permission_denied;
    default:
      return errc::io_error;
  }
}

error make_errno_error(int err, std::string_view what) {
  return error{errc_from_errno(err),
               fmt::format("{}: {}", what, std::strerror(err))};
}

void throw_exception_from_error(const error& e, const boost::source_location&) {
  throw exception{e};
}

} // namespace sandbox
