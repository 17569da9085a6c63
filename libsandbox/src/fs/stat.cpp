#include "sandbox/fs/stat.hpp"

#include <cerrno>

#include <fmt/format.h>

#include "sandbox/fs/path_resolver.hpp"

namespace sandbox::fs {

namespace {

constexpr uint64_t fnv_offset_basis = 0xcbf29ce484222325ULL;
constexpr uint64_t fnv_prime = 0x100000001b3ULL;

// Hashes the value byte by byte, least significant first, so the token does
// not depend on the host's endianness.
void fnv1a(uint64_t& hash, uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    hash ^= (value >> (8 * i)) & 0xffU;
    hash *= fnv_prime;
  }
}

int64_t to_ns(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

} // namespace

std::string_view to_string(file_kind x) noexcept {
  switch (x) {
    case file_kind::file:
      return "file";
    case file_kind::dir:
      return "dir";
    case file_kind::symlink:
      return "symlink";
    case file_kind::other:
      return "other";
  }
  return "other";
}

file_kind kind_of(mode_t mode) noexcept {
  if (S_ISREG(mode))
    return file_kind::file;
  if (S_ISDIR(mode))
    return file_kind::dir;
  if (S_ISLNK(mode))
    return file_kind::symlink;
  return file_kind::other;
}

std::string version_of(const struct ::stat& st) {
  auto hash = fnv_offset_basis;
  fnv1a(hash, static_cast<uint64_t>(st.st_dev));
  fnv1a(hash, static_cast<uint64_t>(st.st_ino));
  fnv1a(hash, static_cast<uint64_t>(st.st_size));
  fnv1a(hash, static_cast<uint64_t>(to_ns(st.st_mtim)));
  fnv1a(hash, static_cast<uint64_t>(to_ns(st.st_ctim)));
  fnv1a(hash, static_cast<uint64_t>(st.st_mode));
  // Not the owner: it reads differently through the id-mapped directories
  // of contained sessions with ids of their own (another session, another
  // uid), and a chown changes the ctime anyway.
  fnv1a(hash, static_cast<uint64_t>(st.st_nlink));
  return fmt::format("{:016x}", hash);
}

file_stat to_file_stat(const struct ::stat& st) {
  file_stat result;
  result.kind = kind_of(st.st_mode);
  result.size = st.st_size < 0 ? 0 : static_cast<uint64_t>(st.st_size);
  result.mtime_ns = to_ns(st.st_mtim);
  result.dev = static_cast<uint64_t>(st.st_dev);
  result.ino = static_cast<uint64_t>(st.st_ino);
  result.version = version_of(st);
  return result;
}

result<file_stat> stat_path(const std::string& abs) {
  if (auto valid = validate_path(abs); !valid)
    return valid.error();
  struct ::stat st;
  if (::lstat(abs.c_str(), &st) != 0)
    return make_errno_error(errno, fmt::format("stat {}", abs));
  return to_file_stat(st);
}

} // namespace sandbox::fs
