#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox {

/// One process as /proc shows it.
struct proc_entry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  /// The state letter of /proc/PID/stat ('R', 'S', 'Z', ...).
  char state = '?';

  bool zombie() const noexcept {
    return state == 'Z' || state == 'X';
  }
};

/// Reads the whole of a small file such as one under /proc or a cgroup's
/// (`cgroup.events`) into `out`; false when it cannot be opened or read
/// (errno says why).
bool read_small_file(const std::string& path, std::string& out);

/// As `read_small_file`, for a cgroup file such as `cgroup.events`: the
/// kernel hands the whole of its text (a few dozen bytes) to the first
/// read, so there is no second read to find its end.
bool read_cgroup_file(const std::string& path, std::string& out);

/// As above, through `fd`, the file kept open (-1: none), from its start:
/// the kernel makes a cgroup file's text anew for a read at offset 0.
/// Without `fd`, or when that read fails, by `path`.
bool read_cgroup_file(int fd, const std::string& path, std::string& out);

/// The fields of a /proc/PID/stat line that the library reads.
struct proc_stat {
  /// Field 3: the state letter.
  char state = '?';
  /// Field 4 and 5: the parent and the process group.
  pid_t ppid = 0;
  pid_t pgid = 0;
  /// Field 22: the start time in clock ticks after boot (with the pid, it
  /// names a process uniquely across pid reuse).
  unsigned long long start_time = 0;
};

/// Parses a /proc/PID/stat line ("pid (comm) state ppid pgrp ..."; comm
/// may hold spaces and parentheses, so from the last ')'); false when it
/// is not one.
bool parse_proc_stat(std::string_view text, proc_stat& out);

/// Reads every process of the system from /proc. Processes that vanish
/// while being read are skipped.
std::vector<proc_entry> proc_snapshot();

/// Returns whether the initial environment of `pid` holds an entry that
/// starts with `prefix` (e.g. "SANDBOX_EXEC=<session>/"). False for zombies
/// and for processes whose environ cannot be read.
bool environ_has_prefix(pid_t pid, std::string_view prefix);

/// Name of the marker variable put into the environment of every child, so
/// that descendants that leave the process group (setsid, double fork) are
/// still found: `SANDBOX_EXEC=<session-id>/<execution-number>`.
constexpr std::string_view marker_variable = "SANDBOX_EXEC";

/// Which processes belong to a set of executions.
struct tree_query {
  /// Process groups of the executions' children (one per child).
  std::vector<pid_t> groups;
  /// Roots whose descendants (by parent pid) belong to the set.
  std::vector<pid_t> roots;
  /// Environment prefix that marks a member, e.g. "SANDBOX_EXEC=<sid>/".
  std::string marker_prefix;
  /// The cgroup v2 directory that holds every member (the execution's or
  /// the session's) in the cgroup mode: then it alone decides membership,
  /// and `groups`, `roots` and `marker_prefix` are not consulted. Empty in
  /// the process-group mode.
  std::string cgroup;
  /// A child directory of `cgroup` whose processes a stop leaves alone
  /// until every other member has ended, then kills (a contained session's
  /// init, which holds its namespaces): they are neither signalled in the
  /// grace stage nor counted. The kill stage kills them with the rest.
  std::string cgroup_keep;
  /// Prefix of the log lines about the stop of these processes, e.g.
  /// "[s-<id> e-3]" (sandbox/log.hpp).
  std::string log_tag;
};

/// Returns the query for a set of executions. `children` are their direct
/// children, each the leader of its own process group: the members of that
/// group and every descendant of the child belong to the set. `groups` adds
/// process groups of children that may have exited already (a background
/// job keeps its group alive after its leader). Descendants that left both
/// (setsid, double fork) are found by `marker_prefix`, the environment
/// entry prefix they inherited, e.g. "SANDBOX_EXEC=<session-id>/".
tree_query executions_query(const std::vector<pid_t>& children,
                            const std::vector<pid_t>& groups,
                            std::string marker_prefix);

/// Finds the live (non-zombie) processes matched by `q`, excluding the
/// calling process: group members, descendants of a root, and processes
/// whose environment carries the marker.
std::vector<pid_t> find_members(const tree_query& q);

/// Same as `find_members`, on a snapshot taken by the caller.
std::vector<pid_t> find_members(const tree_query& q,
                                const std::vector<proc_entry>& snapshot);

} // namespace sandbox
