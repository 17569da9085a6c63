#pragma once

// Reads a child's pipe to its end, shared by the suites that launch
// children themselves.

#include <unistd.h>

#include <cerrno>
#include <string>

namespace sandbox::test {

/// Everything `fd` gives until its end (or an error other than EINTR).
inline std::string read_to_end(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    auto n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

} // namespace sandbox::test
