#include "sandbox/process/proc_stats.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <dirent.h>
#include <unistd.h>

namespace sandbox {

namespace {

// Reads one "Key:   value" line of /proc/self/status as a number; 0 when
// the key is missing.
size_t status_field(const char* key) {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  auto len = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, len, key) == 0 && line.size() > len && line[len] == ':')
      return std::strtoull(line.c_str() + len + 1, nullptr, 10);
  return 0;
}

} // namespace

size_t resident_bytes() {
  long pages = 0;
  long resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return static_cast<size_t>(resident)
         * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

size_t peak_resident_bytes() {
  // The kernel reports VmHWM in KiB.
  return status_field("VmHWM") * 1024;
}

size_t thread_count() {
  return status_field("Threads");
}

size_t open_fd_count(pid_t pid) {
  auto path = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr)
    return 0;
  size_t n = 0;
  while (auto* e = ::readdir(d))
    if (e->d_name[0] != '.')
      ++n;
  ::closedir(d);
  return n;
}

size_t open_fd_count() {
  // The directory stream itself holds one of the descriptors it listed.
  auto n = open_fd_count(::getpid());
  return n > 0 ? n - 1 : 0;
}

} // namespace sandbox
