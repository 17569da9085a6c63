#pragma once

// One HTTP/1.1 connection on the reactor (private): reads a request's
// header, hands the request to the router as an exchange, writes its
// response, and reads the next one (docs/http.md, "Limits").

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include "exchange.hpp"
#include "http/server.hpp"

namespace sandbox::http {

/// A connection as the hub knows it.
class closable {
public:
  virtual ~closable();
  /// Closes the connection on its strand and drops what its request holds
  /// (the callbacks that keep node actors referenced); `done` runs after.
  virtual void shut(std::function<void()> done) = 0;
};

/// What the connections of one server share.
struct connection_hub {
  limits door;
  /// The identity of a request's `Authorization` value; none: the request
  /// is answered 401 and never routed.
  std::function<std::optional<std::string>(const std::string&)> identify;
  /// Called on the connection's strand with every request whose header
  /// was read and whose token names an identity; answers through the
  /// exchange.
  std::function<void(const exchange_ptr&)> route;
  /// Connections open now.
  std::atomic<size_t> open{0};
  /// Set: every connection speaks TLS with this context.
  std::shared_ptr<boost::asio::ssl::context> tls;
  /// Every connection (expired ones are pruned as new ones come).
  std::mutex mtx;
  std::vector<std::weak_ptr<closable>> all;
};

/// Closes every connection of `hub` and waits until each has let go of
/// what its request held: a node's actors may then all end (an embedder's
/// actor system waits for them before its reactor stops). Call from a
/// thread that is not the reactor's.
void close_connections(connection_hub& hub);

/// Serves `socket` (whose executor is a strand of its own) until the
/// client closes it, a limit is hit or the response says close.
void serve_connection(boost::asio::ip::tcp::socket socket,
                      std::shared_ptr<connection_hub> hub);

/// Answers 503 on `socket` and closes it (with TLS, only closes it): the
/// connection cap was reached.
void refuse_connection(boost::asio::ip::tcp::socket socket,
                       const connection_hub& hub);

} // namespace sandbox::http
