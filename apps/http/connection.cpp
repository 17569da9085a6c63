// A connection's lifecycle (connection_impl.hpp): the TLS handshake, each
// request's header read and routed, the watch for a client that leaves,
// the close; and the hub's functions of connection.hpp.
#include "connection_impl.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>

namespace sandbox::http {

namespace detail {

void connection::start() {
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

void connection::shut(std::function<void()> done) {
  net::dispatch(lowest().get_executor(),
                [self = shared_from_this(), done = std::move(done)] {
                  self->close();
                  done();
                });
}

void connection::fail_now(status s, std::string_view code,
                          std::string_view message) {
  keep_ = false;
  reply_bytes(s, "application/json",
              wire::line(wire::error_json(code, message)) + "\n", {});
}

void connection::wait_request(bool first) {
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

void connection::read_header() {
  header_parser_.emplace();
  // The body's limit is the route's (read_body), not Beast's default.
  header_parser_->body_limit(boost::none);
  header_parser_->header_limit(
    static_cast<uint32_t>(hub_->door.max_header_bytes));
  lowest().expires_after(hub_->door.header_timeout);
  with_stream([&](auto& s_) {
    bhttp::async_read_header(s_, buf_, *header_parser_,
                             [self = shared_from_this()](
                               error_code ec, size_t) { self->on_header(ec); });
  });
}

void connection::on_header(error_code ec) {
  if (closed_)
    return;
  if (ec == bhttp::error::header_limit)
    return fail_now(status::request_header_fields_too_large, "header_too_large",
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
  hub_->route(
    std::make_shared<request_exchange>(shared_from_this(), seq_, std::move(h)));
}

void connection::watch_close() {
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

void connection::stop_watching() {
  if (!watching_)
    return;
  watching_ = false;
  error_code ignored;
  lowest().socket().cancel(ignored);
  watch_timer_.cancel();
}

void connection::gone() {
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

void connection::close() {
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

void connection::reset_request() {
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

} // namespace detail

using detail::connection;
using detail::error_code;
using detail::tcp;
namespace net = boost::asio;

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
