// Helper modes: the load generator runs itself as the child of some
// scenarios (as Boost.Process's tests run a purpose-built helper), so that
// what the child does is exact and does not depend on what /bin holds.
//
//   sandbox-load --helper gap    prints a line, sleeps 100 ms, prints again

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "bench.hpp"

namespace sandbox::bench {

namespace {

bool write_all(const char* data) {
  auto n = std::strlen(data);
  while (n > 0) {
    auto w = ::write(1, data, n);
    if (w <= 0)
      return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

/// Two lines 100 ms apart, unbuffered: the gap the subscriber sees minus
/// 100 ms is the latency that the path adds.
int gap() {
  if (!write_all("first\n"))
    return 1;
  timespec ts{0, 100 * 1000 * 1000};
  while (::nanosleep(&ts, &ts) != 0) {
  }
  return write_all("second\n") ? 0 : 1;
}

} // namespace

int run_helper(const std::string& mode) {
  if (mode == "gap")
    return gap();
  std::fprintf(stderr, "unknown helper mode: %s\n", mode.c_str());
  return 2;
}

} // namespace sandbox::bench
