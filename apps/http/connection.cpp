#include "connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
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

namespace sandbox::http {

namespace {

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

  void start() {
    if (!tls_)
      return wait_request(true);
    // The TLS handshake counts as part of the first request's header.
    lowest().expires_after(hub_->door.header_timeout);
    tls_->async_handshake(net::ssl::stream_base::server,
                          [self = shared_from_this()](error_code ec) {
                            if (ec)
                              return self->close();
                            self->tls_started_ = true;
                            self->wait_request(true);
                          });
  }

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

  void shut(std::function<void()> done) override {
    net::dispatch(lowest().get_executor(),
                  [self = shared_from_this(), done = std::move(done)] {
                    self->close();
                    done();
                  });
  }

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

  void read_body(size_t cap, std::function<void(std::string)> done) {
    if (body_started_)
      return;
    body_started_ = true;
    if (head_empty_body_) {
      body_done_ = true;
      watch_close();
      done({});
      return;
    }
    // Beast checks a Content-Length against the limit while it reads the
    // header (whose parser had none): this one is checked here.
    if (auto length = header_parser_->content_length(); length && *length > cap)
      return fail_now(status::payload_too_large, "too_large",
                      fmt::format("the body is {} bytes, over the limit of {} "
                                  "bytes for this route",
                                  *length, cap));
    send_continue();
    string_parser_.emplace(std::move(*header_parser_));
    string_parser_->body_limit(cap);
    lowest().expires_after(hub_->door.idle_timeout);
    with_stream([&](auto& s_) {
      bhttp::async_read(
        s_, buf_, *string_parser_,
        [self = shared_from_this(), seq = seq_, cap,
         done = std::move(done)](error_code ec, size_t) {
          if (self->seq_ != seq || self->closed_)
            return;
          if (ec == bhttp::error::body_limit) {
            self->fail_now(status::payload_too_large, "too_large",
                           fmt::format("the body is over the limit of {} bytes "
                                       "for this route",
                                       cap));
            return;
          }
          if (ec) {
            self->gone();
            return;
          }
          self->body_done_ = true;
          self->lowest().expires_never();
          self->watch_close();
          done(std::move(self->string_parser_->get().body()));
        });
    });
  }

  void
  stream_body(std::function<void(std::string, std::function<void()>)> piece,
              std::function<void()> end) {
    if (body_started_)
      return;
    body_started_ = true;
    piece_fn_ = std::move(piece);
    end_fn_ = std::move(end);
    if (head_empty_body_) {
      body_done_ = true;
      watch_close();
      auto e = std::move(end_fn_);
      e();
      return;
    }
    send_continue();
    buffer_parser_.emplace(std::move(*header_parser_));
    buffer_parser_->body_limit(boost::none);
    read_piece();
  }

  void reply_bytes(status s, std::string content_type, std::string body,
                   fields extra) {
    if (responded_)
      return;
    responded_ = true;
    stop_watching();
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(s, 11);
    res->set(bhttp::field::content_type, content_type);
    for (auto& [k, v] : extra)
      res->set(k, v);
    res->body() = std::move(body);
    res->keep_alive(keep_alive());
    res->prepare_payload();
    lowest().expires_after(hub_->door.idle_timeout);
    with_stream([&](auto& s_) {
      bhttp::async_write(
        s_, *res, [self = shared_from_this(), res](error_code ec, size_t) {
          self->response_done(ec, res->keep_alive());
        });
    });
  }

  void begin(status s, std::string content_type, fields extra) {
    if (responded_)
      return;
    responded_ = true;
    streaming_ = true;
    // The watch goes on: a silent command's stream notices a client that
    // left only this way.
    stream_res_.emplace(s, 11);
    stream_res_->set(bhttp::field::content_type, content_type);
    // No proxy in between may hold the pieces back.
    stream_res_->set(bhttp::field::cache_control, "no-cache");
    stream_res_->set("X-Accel-Buffering", "no");
    for (auto& [k, v] : extra)
      stream_res_->set(k, v);
    stream_res_->keep_alive(keep_alive());
    stream_res_->chunked(true);
    serializer_.emplace(*stream_res_);
    writing_ = true;
    lowest().expires_after(hub_->door.idle_timeout);
    with_stream([&](auto& s_) {
      bhttp::async_write_header(
        s_, *serializer_, [self = shared_from_this()](error_code ec, size_t) {
          self->writing_ = false;
          if (self->closed_)
            return;
          if (ec)
            return self->gone();
          self->pump();
        });
    });
  }

  void write(std::string data, std::function<void(bool)> done) {
    if (!streaming_ || finishing_) {
      if (done)
        done(false);
      return;
    }
    queue_.push_back({std::move(data), std::move(done)});
    pump();
  }

  void finish() {
    if (!streaming_ || finishing_)
      return;
    finishing_ = true;
    pump();
  }

  void abort() {
    gone();
  }

  void on_gone(std::function<void()> f) {
    if (gone_) {
      f();
      return;
    }
    gone_fns_.push_back(std::move(f));
  }

  void fail_now(status s, std::string_view code, std::string_view message) {
    keep_ = false;
    reply_bytes(s, "application/json",
                wire::line(wire::error_json(code, message)) + "\n", {});
  }

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

  void wait_request(bool first) {
    ++seq_;
    reset_request();
    if (buf_.size() > 0)
      return read_header();
    lowest().expires_after(first ? hub_->door.header_timeout
                                 : hub_->door.idle_timeout);
    with_stream([&](auto& s_) {
      s_.async_read_some(buf_.prepare(1024),
                         [self = shared_from_this()](error_code ec, size_t n) {
                           if (ec || self->closed_)
                             return self->close();
                           self->buf_.commit(n);
                           self->read_header();
                         });
    });
  }

  void read_header() {
    header_parser_.emplace();
    // The body's limit is the route's (read_body), not Beast's default.
    header_parser_->body_limit(boost::none);
    header_parser_->header_limit(
      static_cast<uint32_t>(hub_->door.max_header_bytes));
    lowest().expires_after(hub_->door.header_timeout);
    with_stream([&](auto& s_) {
      bhttp::async_read_header(s_, buf_, *header_parser_,
                               [self = shared_from_this()](error_code ec,
                                                           size_t) {
                                 self->on_header(ec);
                               });
    });
  }

  void on_header(error_code ec) {
    if (closed_)
      return;
    if (ec == bhttp::error::header_limit)
      return fail_now(status::request_header_fields_too_large,
                      "header_too_large",
                      fmt::format("the request line and header fields are "
                                  "over the limit of {} bytes",
                                  hub_->door.max_header_bytes));
    if (ec == beast::error::timeout || ec == bhttp::error::end_of_stream
        || ec == net::error::eof || ec == net::error::connection_reset
        || ec == net::error::operation_aborted)
      return close();
    if (ec)
      return fail_now(status::bad_request, "bad_request",
                      fmt::format("malformed request: {}", ec.message()));
    lowest().expires_never();
    auto& req = header_parser_->get();
    request_head h;
    h.method = req.method();
    h.method_name = std::string{req.method_string()};
    h.target = std::string{req.target()};
    for (auto& f : req) {
      std::string name{f.name_string()};
      for (auto& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      h.headers[name] = std::string{f.value()};
    }
    request_keep_alive_ = req.keep_alive();
    auto length = header_parser_->content_length();
    head_empty_body_ = !header_parser_->chunked() && (!length || *length == 0);
    h.empty_body = head_empty_body_;
    if (!parse_request_target(h.target, h))
      return fail_now(status::bad_request, "bad_request",
                      "malformed request target (a path starting with '/' "
                      "and valid percent escapes)");
    auto who = hub_->identify(h.header("authorization"));
    if (!who) {
      keep_ = head_empty_body_;
      reply_bytes(
        status::unauthorized, "application/json",
        wire::line(wire::error_json(
          "unauthorized", h.headers.count("authorization") == 0
                            ? "no Authorization header: send Authorization: "
                              "Bearer TOKEN"
                            : "the bearer token is not known to this node"))
          + "\n",
        {{"WWW-Authenticate", "Bearer"}});
      return;
    }
    h.identity = std::move(*who);
    hub_->route(std::make_shared<request_exchange>(shared_from_this(), seq_,
                                                   std::move(h)));
  }

  void send_continue() {
    auto& req = header_parser_->get();
    auto expect = req[bhttp::field::expect];
    if (expect.empty() || !beast::iequals(expect, "100-continue"))
      return;
    // Small and written before any other write of this request: the
    // response cannot have started yet.
    auto msg = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
    with_stream([&](auto& s_) {
      net::async_write(s_, net::buffer(*msg), [msg](error_code, size_t) {});
    });
  }

  void read_piece() {
    piece_buf_.resize(piece_bytes);
    auto& body = buffer_parser_->get().body();
    body.data = piece_buf_.data();
    body.size = piece_buf_.size();
    lowest().expires_after(hub_->door.idle_timeout);
    with_stream([&](auto& s_) {
      bhttp::async_read(s_, buf_, *buffer_parser_,
                        [self = shared_from_this(), seq = seq_](error_code ec,
                                                                size_t) {
                          if (self->seq_ != seq || self->closed_)
                            return;
                          if (ec == bhttp::error::need_buffer)
                            ec = {};
                          if (ec)
                            return self->gone();
                          self->on_piece();
                        });
    });
  }

  void on_piece() {
    lowest().expires_never();
    auto got = piece_buf_.size() - buffer_parser_->get().body().size;
    bool last = buffer_parser_->is_done();
    if (last) {
      body_done_ = true;
      watch_close();
    }
    auto next = [self = shared_from_this(), seq = seq_, last] {
      self->on_strand(seq, [last](connection& c) {
        if (last) {
          auto e = std::move(c.end_fn_);
          if (e)
            e();
        } else {
          c.read_piece();
        }
      });
    };
    if (got == 0) {
      next();
      return;
    }
    piece_fn_(std::string{piece_buf_.data(), got}, std::move(next));
  }

  void pump() {
    if (writing_ || closed_ || !serializer_)
      return;
    if (!serializer_->is_header_done())
      return;
    if (!queue_.empty()) {
      writing_ = true;
      lowest().expires_after(hub_->door.idle_timeout);
      auto& p = queue_.front();
      with_stream([&](auto& s_) {
        net::async_write(s_, bhttp::make_chunk(net::buffer(p.data)),
                         [self = shared_from_this()](error_code ec, size_t) {
                           self->writing_ = false;
                           if (self->closed_)
                             return;
                           auto p = std::move(self->queue_.front());
                           self->queue_.pop_front();
                           if (ec) {
                             if (p.done)
                               p.done(false);
                             return self->gone();
                           }
                           if (p.done)
                             p.done(true);
                           self->pump();
                         });
      });
      return;
    }
    if (finishing_) {
      writing_ = true;
      lowest().expires_after(hub_->door.idle_timeout);
      bool keep = stream_res_->keep_alive();
      with_stream([&](auto& s_) {
        net::async_write(s_, bhttp::make_chunk_last(),
                         [self = shared_from_this(), keep](error_code ec,
                                                           size_t) {
                           self->writing_ = false;
                           if (self->closed_)
                             return;
                           self->response_done(ec, keep);
                         });
      });
    }
  }

  void response_done(error_code ec, bool keep) {
    if (closed_)
      return;
    if (ec)
      return gone();
    if (!keep)
      return close();
    lowest().expires_never();
    wait_request(false);
  }

  /// While a handler works: notices a client that closes its end. A
  /// socket whose peer sent its FIN is in CLOSE_WAIT; one that only has
  /// bytes to read carries a pipelined request (read after this answer) or,
  /// with TLS, records such as close_notify that come before the FIN: such
  /// a connection is looked at again a little later.
  void watch_close() {
    if (watching_ || (responded_ && !streaming_))
      return;
    watching_ = true;
    lowest().socket().async_wait(
      tcp::socket::wait_read,
      [self = shared_from_this(), seq = seq_](error_code ec) {
        if (self->seq_ != seq || self->closed_ || !self->watching_)
          return;
        self->watching_ = false;
        if (ec)
          return;
        int fd = self->lowest().socket().native_handle();
        tcp_info info{};
        socklen_t len = sizeof info;
        bool peer_closed = ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len)
                             == 0
                           && info.tcpi_state == TCP_CLOSE_WAIT;
        char c;
        auto n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (peer_closed || n == 0
            || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
          return self->gone();
        if (!self->tls_)
          return;
        self->watching_ = true;
        self->watch_timer_.expires_after(std::chrono::milliseconds{250});
        self->watch_timer_.async_wait([self, seq](error_code e) {
          if (e || self->seq_ != seq || self->closed_ || !self->watching_)
            return;
          self->watching_ = false;
          self->watch_close();
        });
      });
  }

  void stop_watching() {
    if (!watching_)
      return;
    watching_ = false;
    error_code ignored;
    lowest().socket().cancel(ignored);
    watch_timer_.cancel();
  }

  void gone() {
    if (gone_)
      return;
    gone_ = true;
    auto fns = std::move(gone_fns_);
    gone_fns_.clear();
    for (auto& f : fns)
      f();
    // The pieces stay until the connection goes: the first may be in a
    // write that has not come back yet.
    for (auto& p : queue_)
      if (auto done = std::exchange(p.done, nullptr))
        done(false);
    close();
  }

  void close() {
    if (closed_)
      return;
    closed_ = true;
    if (!gone_) {
      gone_ = true;
      auto fns = std::move(gone_fns_);
      for (auto& f : fns)
        f();
    }
    error_code ignored;
    if (tls_ && tls_started_) {
      // close_notify, then the socket: a TLS client then sees a clean end.
      lowest().expires_after(std::chrono::seconds{1});
      tls_->async_shutdown([self = shared_from_this()](error_code) {
        error_code ignored;
        self->lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
        self->lowest().close();
      });
    } else {
      lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
      lowest().close();
    }
    watch_timer_.cancel();
    // The callbacks go now (they may hold node actors, which must be able
    // to end before the last exchange lets go of the connection). The
    // parsers, buffers and pieces stay until then: an operation that has
    // not come back yet still uses them.
    gone_fns_.clear();
    piece_fn_ = nullptr;
    end_fn_ = nullptr;
    for (auto& p : queue_)
      p.done = nullptr;
  }

  void reset_request() {
    header_parser_.reset();
    string_parser_.reset();
    buffer_parser_.reset();
    serializer_.reset();
    stream_res_.reset();
    piece_buf_ = std::string{};
    queue_.clear();
    gone_fns_.clear();
    piece_fn_ = nullptr;
    end_fn_ = nullptr;
    body_started_ = body_done_ = responded_ = streaming_ = finishing_ = false;
    writing_ = watching_ = false;
    keep_ = true;
    if (!closed_)
      gone_ = false;
  }

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

// -- request_exchange ---------------------------------------------------------

void request_exchange::read_body(size_t cap,
                                 std::function<void(std::string)> done) {
  conn_->on_strand(seq_, [cap, done = std::move(done)](connection& c) mutable {
    c.read_body(cap, std::move(done));
  });
}

void request_exchange::stream_body(
  std::function<void(std::string, std::function<void()>)> piece,
  std::function<void()> end) {
  conn_->on_strand(seq_, [piece = std::move(piece),
                          end = std::move(end)](connection& c) mutable {
    c.stream_body(std::move(piece), std::move(end));
  });
}

void request_exchange::reply(status s, const json& body, fields extra) {
  reply_bytes(s, "application/json", wire::line(body) + "\n", std::move(extra));
}

void request_exchange::reply_bytes(status s, std::string content_type,
                                   std::string body, fields extra) {
  conn_->on_strand(seq_, [s, ct = std::move(content_type),
                          body = std::move(body),
                          extra = std::move(extra)](connection& c) mutable {
    c.reply_bytes(s, std::move(ct), std::move(body), std::move(extra));
  });
}

void request_exchange::begin(status s, std::string content_type, fields extra) {
  conn_->on_strand(seq_, [s, ct = std::move(content_type),
                          extra = std::move(extra)](connection& c) mutable {
    c.begin(s, std::move(ct), std::move(extra));
  });
}

void request_exchange::write(std::string data, std::function<void(bool)> done) {
  auto seq = seq_;
  auto conn = conn_;
  net::dispatch(conn->executor(), [conn, seq, data = std::move(data),
                                   done = std::move(done)]() mutable {
    if (conn->seq_ != seq || conn->closed_) {
      if (done)
        done(false);
      return;
    }
    conn->write(std::move(data), std::move(done));
  });
}

void request_exchange::finish() {
  conn_->on_strand(seq_, [](connection& c) { c.finish(); });
}

void request_exchange::abort() {
  conn_->on_strand(seq_, [](connection& c) { c.abort(); });
}

void request_exchange::on_gone(std::function<void()> f) {
  auto seq = seq_;
  auto conn = conn_;
  net::dispatch(conn->executor(), [conn, seq, f = std::move(f)]() mutable {
    // A stale or closed exchange: its client is gone.
    if (conn->seq_ != seq || conn->closed_)
      return f();
    conn->on_gone(std::move(f));
  });
}

} // namespace

closable::~closable() = default;

void serve_connection(tcp::socket socket, std::shared_ptr<connection_hub> hub) {
  auto c = std::make_shared<connection>(std::move(socket), hub);
  {
    std::lock_guard<std::mutex> guard{hub->mtx};
    auto& all = hub->all;
    if (all.size() >= 64 && all.size() > 2 * hub->open.load())
      all.erase(std::remove_if(all.begin(), all.end(),
                               [](auto& w) { return w.expired(); }),
                all.end());
    all.push_back(c);
  }
  c->start();
}

void close_connections(connection_hub& hub) {
  std::vector<std::shared_ptr<closable>> live;
  {
    std::lock_guard<std::mutex> guard{hub.mtx};
    for (auto& w : hub.all)
      if (auto c = w.lock())
        live.push_back(std::move(c));
    hub.all.clear();
  }
  std::mutex mtx;
  std::condition_variable cv;
  size_t left = live.size();
  for (auto& c : live)
    c->shut([&] {
      std::lock_guard<std::mutex> guard{mtx};
      if (--left == 0)
        cv.notify_all();
    });
  std::unique_lock<std::mutex> lock{mtx};
  cv.wait(lock, [&] { return left == 0; });
}

void refuse_connection(tcp::socket socket, const connection_hub& hub) {
  if (hub.tls) {
    // No TLS session to say it in: the client sees the connection close.
    error_code ignored;
    socket.close(ignored);
    return;
  }
  auto body = wire::line(wire::error_json(
                "limit", "the node serves as many connections as it may; try "
                         "again later"))
              + "\n";
  auto msg = std::make_shared<std::string>(fmt::format(
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    "Content-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{}",
    body.size(), body));
  auto s = std::make_shared<tcp::socket>(std::move(socket));
  net::async_write(*s, net::buffer(*msg), [s, msg](error_code, size_t) {
    error_code ignored;
    s->shutdown(tcp::socket::shutdown_both, ignored);
    s->close(ignored);
  });
}

} // namespace sandbox::http
