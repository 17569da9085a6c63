#pragma once

// Lexical path relations shared by libsandbox's sources.

#include <string>

namespace sandbox::detail {

/// Whether `path` is `dir` or lies below it (both absolute and normalized;
/// compared as strings).
inline bool inside(const std::string& path, const std::string& dir) {
  if (dir == "/")
    return true;
  return path == dir
         || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0
             && path[dir.size()] == '/');
}

} // namespace sandbox::detail
