#pragma once

#include <sys/types.h>

#include <cstddef>

namespace sandbox {

/// Returns the resident memory of this process in bytes, read from the
/// second field of /proc/self/statm (pages) times the page size. Returns 0
/// when the file cannot be read, so a failed reading never looks like
/// growth to a caller that compares two readings.
size_t resident_bytes();

/// Returns the peak resident memory of this process (VmHWM of
/// /proc/self/status) in bytes, or 0 when it cannot be read. Writing "5" to
/// /proc/self/clear_refs resets the peak to the current resident memory.
size_t peak_resident_bytes();

/// Returns the number of threads of this process (Threads of
/// /proc/self/status), or 0 when it cannot be read.
size_t thread_count();

/// Returns the number of file descriptors open in this process, counted in
/// /proc/self/fd; the descriptor used for listing that directory is not
/// counted. Returns 0 when the directory cannot be opened.
size_t open_fd_count();

/// Returns the number of file descriptors open in process `pid`, counted in
/// /proc/<pid>/fd (for this process, the listing's own descriptor is
/// counted). Returns 0 when the directory cannot be opened.
size_t open_fd_count(pid_t pid);

} // namespace sandbox
