#pragma once

#include <sys/socket.h>

#include <functional>
#include <memory>
#include <string>

#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

class reactor;

/// Forwards the TCP connections accepted on one listening socket to one
/// destination, on the shared reactor: per accepted connection it asks a
/// socket factory for a socket (e.g. one made inside a session's network
/// namespace, or a plain one of the host), connects it to the destination
/// without blocking and pumps bytes both ways. A half-close travels (EOF on
/// one side shuts down writing on the other); both sockets close once both
/// directions ended or either failed. A connection whose destination
/// refuses (or whose factory fails) is reset at once. No thread per
/// connection: everything runs as completion handlers of the reactor.
///
/// Thread-safe; `stop` closes every socket before it returns.
class tcp_forwarder {
public:
  /// Makes the socket a connection to the destination goes through.
  using socket_factory = std::function<result<unique_fd>()>;

  /// Starts accepting on `listener` (bound and listening). `factory` may
  /// be empty: connections are then reset until `set_factory`. `name` is
  /// for the log. Errors: `io_error` when the reactor cannot take the
  /// listener.
  static result<std::shared_ptr<tcp_forwarder>>
  start(reactor& r, unique_fd listener, const sockaddr* dest,
        socklen_t dest_len, socket_factory factory, std::string name);

  /// Replaces the factory (for connections accepted from now on).
  void set_factory(socket_factory factory);

  /// Closes the listener and every connection, now. Idempotent.
  void stop() noexcept;

  /// Connections open right now.
  size_t connections() const;

  ~tcp_forwarder();

  struct impl;

  explicit tcp_forwarder(std::shared_ptr<impl> p) : impl_(std::move(p)) {
  }

private:
  std::shared_ptr<impl> impl_;
};

} // namespace sandbox
