#pragma once

// One request and its response, as a route handler sees it (private to the
// HTTP server). The connection (connection.cpp) reads the request's header,
// hands an exchange to the router and, once the response is complete, reads
// the next request. Every member may be called from any thread (a CAF
// worker that got a node's answer, a reactor thread): each is posted to the
// connection's strand. After the response is complete (or the client is
// gone) the calls do nothing.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/http/status.hpp>
#include <boost/beast/http/verb.hpp>

#include "sandbox/errc.hpp"
#include "wire/json.hpp"

namespace sandbox::http {

using status = boost::beast::http::status;
using verb = boost::beast::http::verb;
using json = wire::json;

/// Header fields of a response besides the ones every response has.
using fields = std::vector<std::pair<std::string, std::string>>;

/// What a request carries that the routes look at.
struct request_head {
  verb method = verb::unknown;
  /// The method's name as sent (for the 405 message).
  std::string method_name;
  /// The path, percent-decoded segment by segment, split at '/'.
  std::vector<std::string> segments;
  /// The path ended with '/' (not counted as a segment).
  bool trailing_slash = false;
  /// The raw target (path and query), for messages.
  std::string target;
  /// The query's parameters, percent-decoded (the last of a repeated name).
  std::map<std::string, std::string> query;
  /// Header fields by lower-case name (the last of a repeated one).
  std::map<std::string, std::string> headers;
  /// The identity the bearer token names.
  std::string identity;
  /// Whether the body is empty (no Content-Length or 0, not chunked).
  bool empty_body = true;

  /// A header field's value, empty when absent.
  const std::string& header(const std::string& lower_name) const;
};

class exchange {
public:
  virtual ~exchange();

  virtual const request_head& head() const = 0;

  // -- the request body -------------------------------------------------------

  /// Reads the whole body, at most `cap` bytes; a larger one is answered
  /// 413 (and `done` is not called).
  virtual void read_body(size_t cap, std::function<void(std::string body)> done)
    = 0;

  /// Reads the body piece by piece: `piece` gets each piece and a `next`
  /// to call once it has been used (the next read waits for it: the
  /// back-pressure of a slow consumer), `end` the end of the body. A client
  /// that goes away or stalls calls `gone`.
  virtual void stream_body(
    std::function<void(std::string piece, std::function<void()> next)> piece,
    std::function<void()> end)
    = 0;

  // -- the response
  // -------------------------------------------------------------

  /// A JSON response.
  virtual void reply(status s, const json& body, fields extra = {}) = 0;

  /// A response of any content type.
  virtual void reply_bytes(status s, std::string content_type, std::string body,
                           fields extra = {})
    = 0;

  /// The error object of §6b with the status that belongs to its code.
  void fail(const sandbox::error& err);
  void fail(status s, std::string_view code, std::string_view message,
            fields extra = {});

  /// Starts a chunked response; `write` sends pieces of its body and calls
  /// `done` with false when the client is gone; `finish` ends it.
  virtual void begin(status s, std::string content_type, fields extra = {}) = 0;
  virtual void write(std::string data, std::function<void(bool ok)> done) = 0;
  virtual void finish() = 0;

  /// Cuts the connection: a response that cannot end well (a file whose
  /// read failed halfway) must not look complete.
  virtual void abort() = 0;

  /// `f` runs once when the client goes away before the response is
  /// complete (a closed connection, a write that failed or timed out); at
  /// once if it is gone already.
  virtual void on_gone(std::function<void()> f) = 0;
};

using exchange_ptr = std::shared_ptr<exchange>;

/// Splits `target` (path and query) into `h.segments` (percent-decoded
/// segment by segment; a trailing '/' sets `h.trailing_slash`) and
/// `h.query`; false for a target that does not start with '/' or holds a
/// bad escape.
bool parse_request_target(std::string_view target, request_head& h);

/// The HTTP status of a `sandbox` error code (docs/http.md, "Errors").
status status_of(errc code);

} // namespace sandbox::http
