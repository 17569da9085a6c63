#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sandbox/errc.hpp"

namespace sandbox {

/// How far a session is isolated from its host (docs/security.md).
enum class isolation_mode : uint8_t {
  /// Commands run as the node's user and see what it sees.
  none,
  /// Own user, PID, mount, IPC, UTS and network namespaces per session,
  /// Landlock on every command, rlimits and cgroup limits.
  contained,
};

/// "none" or "contained".
std::string_view to_string(isolation_mode x) noexcept;

/// Parses "none" or "contained". Errors: `invalid_argument` naming `text`.
result<isolation_mode> parse_isolation(std::string_view text);

/// Limits of a contained session. Zero means "no limit" everywhere.
struct isolation_limits {
  /// RLIMIT_CPU of every command (seconds of CPU time per process).
  uint64_t cpu_seconds = 3600;
  /// RLIMIT_FSIZE of every command (bytes per file written).
  uint64_t file_size = uint64_t{16} << 30;
  /// RLIMIT_NOFILE of every command.
  uint64_t open_files = 4096;
  /// Memory of the session's processes together (bytes): `memory.max` of
  /// its cgroup v2, or `memory.limit_in_bytes` of its cgroup v1 where only
  /// v1 has the `memory` controller.
  uint64_t memory = 0;
  /// Processes of the session together: `pids.max` of its cgroup (v2, or
  /// v1 where only v1 has the `pids` controller).
  uint64_t processes = 0;
  /// Connections the node forwards for the session at once (to its allowed
  /// destinations and into its leased port): one more is reset and
  /// reported as `connection_limit`. Each costs the node two descriptors
  /// and 128 KiB of buffers.
  uint64_t max_connections = 256;
  /// Size of the private /tmp and /dev/shm each (bytes; 0: 1 GiB).
  uint64_t tmp_size = 0;
};

/// What this host can give a contained session, probed once per process
/// (`host_isolation`).
struct isolation_support {
  /// A throwaway session init was made: user, PID, mount, IPC, UTS and
  /// network namespaces, a private /tmp, a /proc of its own, loopback up.
  bool namespaces = false;
  /// Why not (the step and errno that failed); empty when they work.
  std::string namespaces_detail;
  /// Landlock ABI version (0: none).
  int landlock_abi = 0;
  std::string landlock_detail;
  /// cgroup v2 controllers the node's cgroups can use: those enabled for
  /// the children of its own cgroup (its `cgroup.subtree_control`).
  std::vector<std::string> cgroup_controllers;
  /// Controllers (`memory`, `pids`) that v2 lacks but a cgroup v1
  /// hierarchy gives: {controller, the node's own directory there}, each
  /// checked writable (a directory was made and removed below it).
  std::vector<std::pair<std::string, std::string>> cgroup_v1;

  /// Seccomp user notification works: refused writes and connections are
  /// reported as violations (syscall_watch.hpp); without it they are only
  /// refused.
  bool syscall_watch = false;

  /// fanotify permission events work (`CAP_SYS_ADMIN`): opens of denied
  /// paths are refused with `EPERM` and reported (read_guard.hpp); without
  /// them denied paths read as empty and are not reported.
  bool read_watch = false;

  /// With `read_watch`, the node may also serve FUSE (`/dev/fuse`): a name
  /// looked up below a denied directory is refused with `EPERM` and
  /// reported too; without it such a name is just missing (`ENOENT`).
  bool lookup_watch = false;

  /// A contained session's root is a host uid and gid of its own
  /// (`containment_spec::id_base`, docs/security.md "Identity"): the node is
  /// root with CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN in the initial user
  /// namespace, and a throwaway session with an id-mapped working directory
  /// was made. Without it a session's root is the node's own uid.
  bool own_ids = false;
  /// Why not; empty when it is.
  std::string own_ids_detail;

  /// Whether `name` is among `cgroup_controllers` or `cgroup_v1`.
  bool has_controller(std::string_view name) const;

  /// The node's directory in the v1 hierarchy of `name`; empty when v2
  /// has the controller or no usable v1 hierarchy does.
  std::string v1_directory(std::string_view name) const;

  /// What is missing for a contained session with `limits`, one phrase per
  /// item joined by "; " (empty: everything is there), e.g.
  /// `user namespaces (clone: Operation not permitted)`.
  std::string missing(const isolation_limits& limits = {}) const;
};

/// The default range of host ids contained sessions take their own uid and
/// gid from (`runtime_config::isolation_uid_base`, `isolation_uid_count`):
/// 0x7a000000 (2046820352) and the 65535 above, in the block systemd leaves
/// unused (between its container and "foreign" ranges).
constexpr uint32_t default_session_id_base = 0x7a000000;
constexpr uint32_t default_session_id_count = 65536;

/// The lowest Landlock ABI a contained session needs: 3 (truncate is
/// controlled from ABI 3 on; below it, a command could truncate any file).
constexpr int min_landlock_abi = 3;

/// Probes the host once (the first call makes and ends a throwaway session
/// init; later calls return the same answer). Thread-safe.
const isolation_support& host_isolation();

} // namespace sandbox
