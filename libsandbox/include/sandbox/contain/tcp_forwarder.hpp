#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "sandbox/errc.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox {

class reactor;

/// A cap on the connections open at once through several forwarders (a
/// session's). Each forwarder that shares it takes one unit per accepted
/// connection and gives it back when both sockets close; a connection that
/// finds none left is reset at once. `on_refused` is called with the name
/// of the forwarder (on a reactor thread) for the first refusal, and again
/// for the first one after a unit came back: a flood of refused
/// connections is one call. Thread-safe.
class connection_budget {
public:
  using refusal_callback = std::function<void(const std::string& forwarder)>;

  /// `max` connections at once (at least 1).
  connection_budget(size_t max, refusal_callback on_refused);

  /// Takes one unit; false when none is left.
  bool take(const std::string& forwarder);

  /// Gives back a unit taken before.
  void give_back() noexcept;

  size_t max() const noexcept {
    return max_;
  }

  /// Units taken right now.
  size_t in_use() const noexcept;

private:
  const size_t max_;
  refusal_callback on_refused_;
  std::atomic<size_t> in_use_{0};
  /// Set by a refusal, cleared when a unit comes back.
  std::atomic<bool> refusing_{false};
};

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
  /// for the log and the budget's refusals. With a `budget`, each
  /// connection takes a unit of it (see `connection_budget`). Errors:
  /// `io_error` when the reactor cannot take the listener.
  static result<std::shared_ptr<tcp_forwarder>>
  start(reactor& r, unique_fd listener, const sockaddr* dest,
        socklen_t dest_len, socket_factory factory, std::string name,
        std::shared_ptr<connection_budget> budget = nullptr);

  /// Replaces the factory (for connections accepted from now on).
  void set_factory(socket_factory factory);

  /// Replaces the budget (for connections accepted from now on; each
  /// connection gives its unit back to the budget it took it from).
  void set_budget(std::shared_ptr<connection_budget> budget);

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
