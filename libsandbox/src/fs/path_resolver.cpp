#include "sandbox/fs/path_resolver.hpp"

#include <vector>

#include <fmt/format.h>

namespace sandbox::fs {

std::string resolve(std::string_view base_dir, std::string_view path) {
  std::string joined;
  if (base_dir.empty() || (!path.empty() && path.front() == '/')) {
    joined = path;
  } else {
    joined.reserve(base_dir.size() + path.size() + 1);
    joined = base_dir;
    joined += '/';
    joined += path;
  }
  auto absolute = !joined.empty() && joined.front() == '/';
  std::vector<std::string_view> parts;
  std::string_view rest = joined;
  while (!rest.empty()) {
    auto pos = rest.find('/');
    auto part = rest.substr(0, pos);
    rest = pos == std::string_view::npos ? std::string_view{}
                                         : rest.substr(pos + 1);
    if (part.empty() || part == ".")
      continue;
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..")
        parts.pop_back();
      else if (!absolute)
        // A relative path may legitimately climb above its start; keep the
        // component so that a later join with a real base resolves it.
        parts.push_back(part);
      continue;
    }
    parts.push_back(part);
  }
  std::string result;
  result.reserve(joined.size());
  for (auto part : parts) {
    if (absolute || !result.empty())
      result += '/';
    result += part;
  }
  if (result.empty())
    result = absolute ? "/" : ".";
  return result;
}

bool names_directory(std::string_view path) noexcept {
  if (path.empty())
    return false;
  if (path.back() == '/')
    return true;
  auto slash = path.rfind('/');
  auto last = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return last == "." || last == "..";
}

std::string resolve_keeping_slash(std::string_view base_dir,
                                  std::string_view path) {
  auto result = resolve(base_dir, path);
  if (names_directory(path) && result.back() != '/')
    result += '/';
  return result;
}

result<void> validate_path(std::string_view path) {
  if (path.empty())
    return error{errc::invalid_argument, "invalid path: the path is empty"};
  if (auto pos = path.find('\0'); pos != std::string_view::npos) {
    std::string shown;
    for (auto c : path) {
      if (c == '\0')
        shown += "\\0";
      else
        shown += c;
    }
    return error{errc::invalid_argument,
                 fmt::format("invalid path \"{}\": contains a NUL byte at "
                             "offset {}",
                             shown, pos)};
  }
  return {};
}

} // namespace sandbox::fs
