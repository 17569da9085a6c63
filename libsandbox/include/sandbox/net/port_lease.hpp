#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "sandbox/errc.hpp"

namespace sandbox {

/// First port of the default lease range, above the registered ports most
/// local services use. The range overlaps the Linux ephemeral range
/// (32768–60999); the bind check skips ports that outgoing connections hold.
constexpr uint16_t default_first_leased_port = 20000;

/// Last port of the default lease range (inclusive).
constexpr uint16_t default_last_leased_port = 59999;

/// Checks a lease range: `first` to `last`, both inclusive, non-empty and
/// without port 0.
/// @returns `invalid_argument` naming the range otherwise:
///   `invalid port range 50000-40000: expected 1 <= first <= last <= 65535`.
result<void> validate_port_range(uint16_t first, uint16_t last);

namespace detail {

struct port_lease_state;

} // namespace detail

/// A leased TCP port: while the handle holds it, the registry that issued it
/// hands it to no one else. Move-only; the destructor or `release()` returns
/// the port exactly once, and a moved-from handle holds nothing. A lease keeps
/// its registry's bookkeeping alive, so it may outlive the
/// `port_lease_registry` object. One handle is not safe to use from two
/// threads at once; distinct handles are.
class port_lease {
public:
  /// Makes an empty handle that holds no port.
  port_lease() noexcept = default;

  port_lease(port_lease&& other) noexcept;

  /// Releases the port held by this handle, then takes over `other`'s.
  port_lease& operator=(port_lease&& other) noexcept;

  port_lease(const port_lease&) = delete;
  port_lease& operator=(const port_lease&) = delete;

  ~port_lease();

  /// Returns the leased port, or 0 when the handle is empty.
  uint16_t port() const noexcept {
    return port_;
  }

  /// Checks whether the handle holds a port.
  explicit operator bool() const noexcept {
    return state_ != nullptr;
  }

  /// Returns the port to its registry and empties the handle. Idempotent:
  /// later calls (and the destructor) do nothing.
  void release() noexcept;

private:
  friend class port_lease_registry;

  port_lease(std::shared_ptr<detail::port_lease_state> state,
             uint16_t port) noexcept;

  std::shared_ptr<detail::port_lease_state> state_;
  uint16_t port_ = 0;
};

/// The node-wide registry of leased TCP ports (§18, §22): it never
/// hands one port to two live leases, and hands out only ports that a TCP
/// socket can bind on 127.0.0.1 at the time of the lease.
///
/// Ports are picked by scanning the range from a rotating cursor that moves
/// past each port it hands out, so a released port is handed out again only
/// after the cursor has gone round the whole range: a server that ran on it
/// may leave TIME_WAIT connections behind for a minute, and a quick reuse
/// would also confuse clients still talking to the old session. The cursor
/// starts at a random point of the range so that two nodes on one machine
/// seldom pick the same ports (leases are node-wide only; the bind check
/// catches ports another process has already bound).
///
/// The bind check proves only that the port was free at lease time; nothing
/// reserves it against other processes afterwards. Copies of a registry are
/// handles to the same registry. All member functions are thread-safe.
class port_lease_registry {
public:
  /// Makes a registry leasing ports from `first` to `last`, both inclusive.
  /// @throws sandbox::exception with `errc::invalid_argument` naming the
  ///         range when `first` is 0 or `first > last` (check it first with
  ///         `validate_port_range`).
  explicit port_lease_registry(uint16_t first = default_first_leased_port,
                               uint16_t last = default_last_leased_port);

  // Copies share one registry. No move members are declared, so a "moved"
  // registry is copied and never left without its state.
  port_lease_registry(const port_lease_registry&) = default;
  port_lease_registry& operator=(const port_lease_registry&) = default;

  /// Leases a port that no live lease holds and that binds on 127.0.0.1.
  /// @returns `errc::port_unavailable`, with a message naming the range,
  ///          when every port of the range is leased or in use; the caller
  ///          may retry after releasing leases or with a wider range.
  /// @returns `errc::io_error` (or `errc::permission_denied` when a security
  ///          policy forbids sockets), naming the syscall, when no socket can
  ///          be made to check a port, e.g. the process ran out of file
  ///          descriptors.
  result<port_lease> acquire();

  /// Returns how many ports are leased right now (including, for a moment,
  /// ports that an `acquire()` is checking).
  size_t leased_count() const;

  /// Checks whether a live lease holds `port`; also true for the moment an
  /// `acquire()` is checking whether `port` binds.
  bool is_leased(uint16_t port) const;

  /// Returns the first port of the range.
  uint16_t first() const noexcept;

  /// Returns the last port of the range (inclusive).
  uint16_t last() const noexcept;

private:
  std::shared_ptr<detail::port_lease_state> state_;
};

} // namespace sandbox
