#pragma once

// The connection class behind connection.hpp (private to apps/http): its
// lifecycle and request reading in connection.cpp, its bodies and
// responses in connection_body.cpp.

#include <deque>
#include <optional>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "connection.hpp"

namespace sandbox::http::detail {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

/// The most a streamed body is read at a time.
constexpr size_t piece_bytes = 64 * 1024;

class connection;

/// The exchange of one request of a connection.
class request_exchange : public exchange {
public:
  request_exchange(std::shared_ptr<connection> c, uint64_t seq, request_head h)
    : conn_(std::move(c)), seq_(seq), head_(std::move(h)) {
  }

  const request_head& head() const override {
    return head_;
  }

  void read_body(size_t cap, std::function<void(std::string)> done) override;
  void
  stream_body(std::function<void(std::string, std::function<void()>)> piece,
              std::function<void()> end) override;
  void reply(status s, const json& body, fields extra) override;
  void reply_bytes(status s, std::string content_type, std::string body,
                   fields extra) override;
  void begin(status s, std::string content_type, fields extra) override;
  void write(std::string data, std::function<void(bool)> done) override;
  void finish() override;
  void abort() override;
  void on_gone(std::function<void()> f) override;

private:
  std::shared_ptr<connection> conn_;
  uint64_t seq_;
  request_head head_;
};

class connection : public closable,
                   public std::enable_shared_from_this<connection> {
public:
  connection(tcp::socket s, std::shared_ptr<connection_hub> hub)
    : hub_(std::move(hub)), watch_timer_(s.get_executor()) {
    if (hub_->tls)
      tls_.emplace(beast::tcp_stream{std::move(s)}, *hub_->tls);
    else
      plain_.emplace(std::move(s));
    ++hub_->open;
  }

  ~connection() {
    --hub_->open;
  }

  void start();

  /// The TCP stream under the TLS layer, if there is one.
  beast::tcp_stream& lowest() {
    return plain_ ? *plain_ : beast::get_lowest_layer(*tls_);
  }

  /// Calls `f` with the stream a request is read from and its answer
  /// written to: the TCP stream, or the TLS stream over it.
  template <class F>
  void with_stream(F f) {
    if (tls_)
      f(*tls_);
    else
      f(*plain_);
  }

  void shut(std::function<void()> done) override;

  /// Runs `f` on the strand if request `seq` is still the current one.
  template <class F>
  void on_strand(uint64_t seq, F f) {
    net::dispatch(lowest().get_executor(),
                  [self = shared_from_this(), seq, f = std::move(f)]() mutable {
                    if (self->seq_ == seq && !self->closed_)
                      f(*self);
                  });
  }

  // -- called on the strand through request_exchange -------------------------

  void read_body(size_t cap, std::function<void(std::string)> done);

  void
  stream_body(std::function<void(std::string, std::function<void()>)> piece,
              std::function<void()> end);

  void reply_bytes(status s, std::string content_type, std::string body,
                   fields extra);

  void begin(status s, std::string content_type, fields extra);

  void write(std::string data, std::function<void(bool)> done);

  void finish();

  void abort() {
    gone();
  }

  void on_gone(std::function<void()> f);

  void fail_now(status s, std::string_view code, std::string_view message);

  beast::tcp_stream::executor_type executor() {
    return lowest().get_executor();
  }

  uint64_t seq_ = 0;
  bool closed_ = false;

private:
  struct piece {
    std::string data;
    std::function<void(bool)> done;
  };

  bool keep_alive() const {
    // A body nobody read is still on the wire: the connection cannot carry
    // another request.
    return keep_ && (body_done_ || (head_empty_body_ && !body_started_))
           && request_keep_alive_;
  }

  void wait_request(bool first);

  void read_header();

  void on_header(error_code ec);

  void send_continue();

  void read_piece();

  void on_piece();

  void pump();

  void response_done(error_code ec, bool keep);

  /// While a handler works: notices a client that closes its end. A
  /// socket whose peer sent its FIN is in CLOSE_WAIT; one that only has
  /// bytes to read carries a pipelined request (read after this answer) or,
  /// with TLS, records such as close_notify that come before the FIN: such
  /// a connection is looked at again a little later.
  void watch_close();

  void stop_watching();

  void gone();

  void close();

  void reset_request();

  std::shared_ptr<connection_hub> hub_;
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
  bool tls_started_ = false;
  /// Spaces the checks of a TLS connection whose unread bytes keep it
  /// readable (see watch_close).
  net::steady_timer watch_timer_;
  beast::flat_buffer buf_;
  std::optional<bhttp::request_parser<bhttp::empty_body>> header_parser_;
  std::optional<bhttp::request_parser<bhttp::string_body>> string_parser_;
  std::optional<bhttp::request_parser<bhttp::buffer_body>> buffer_parser_;
  std::string piece_buf_;
  std::function<void(std::string, std::function<void()>)> piece_fn_;
  std::function<void()> end_fn_;
  std::optional<bhttp::response<bhttp::empty_body>> stream_res_;
  std::optional<bhttp::response_serializer<bhttp::empty_body>> serializer_;
  std::deque<piece> queue_;
  std::vector<std::function<void()>> gone_fns_;
  bool head_empty_body_ = true;
  bool request_keep_alive_ = true;
  bool keep_ = true;
  bool body_started_ = false;
  bool body_done_ = false;
  bool responded_ = false;
  bool streaming_ = false;
  bool finishing_ = false;
  bool writing_ = false;
  bool watching_ = false;
  bool gone_ = false;
};

} // namespace sandbox::http::detail
