#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace sandbox::fs {

/// The host uid and gid a contained session's files are made and checked
/// with (docs/security.md, "Identity"); -1: the node's own.
struct file_ids {
  int64_t uid = -1;
  int64_t gid = -1;

  bool own() const noexcept {
    return uid >= 0;
  }
};

/// For its lifetime, the calling thread does its file work as `ids`: file
/// system uid and gid `ids`, no supplementary groups. The kernel keeps
/// these per thread (the raw calls, not glibc's process-wide wrappers),
/// so one file thread acts for one session at a time; the node's own ids
/// come back at the end of the scope. A session with ids of its own sees
/// its working directory through id-mapped mounts and its `/tmp` as a file
/// system of its user namespace: the node's uid is not mapped in either,
/// so a file made there as the node fails with `EOVERFLOW`. Acting as the
/// session also means the node reads and writes for it only what the
/// session itself may. Does nothing for `ids` without `own()`.
class acting_as {
public:
  explicit acting_as(file_ids ids) noexcept;
  ~acting_as();
  acting_as(const acting_as&) = delete;
  acting_as& operator=(const acting_as&) = delete;

private:
  bool active_ = false;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::vector<gid_t> groups_;
};

} // namespace sandbox::fs
