#pragma once

// One HTTP/1.1 connection on the reactor (private): reads a request's
// header, hands the request to the router as an exchange, writes its
// response, and reads the next one (docs/http.md, "Limits").

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "exchange.hpp"
#include "http/server.hpp"

namespace sandbox::http {

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
};

/// Serves `socket` (whose executor is a strand of its own) until the
/// client closes it, a limit is hit or the response says close.
void serve_connection(boost::asio::ip::tcp::socket socket,
                      std::shared_ptr<connection_hub> hub);

/// Answers 503 on `socket` and closes it: the connection cap was reached.
void refuse_connection(boost::asio::ip::tcp::socket socket);

} // namespace sandbox::http
