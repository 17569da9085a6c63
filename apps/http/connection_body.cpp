// The bodies and responses of a connection (connection_impl.hpp): a body
// read whole or in pieces, a response in one piece or streamed in chunks.
#include "connection_impl.hpp"

namespace sandbox::http::detail {

void connection::read_body(size_t cap, std::function<void(std::string)> done) {
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

void connection::stream_body(
  std::function<void(std::string, std::function<void()>)> piece,
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

void connection::reply_bytes(status s, std::string content_type,
                             std::string body, fields extra) {
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
    bhttp::async_write(s_, *res,
                       [self = shared_from_this(), res](error_code ec, size_t) {
                         self->response_done(ec, res->keep_alive());
                       });
  });
}

void connection::begin(status s, std::string content_type, fields extra) {
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

void connection::write(std::string data, std::function<void(bool)> done) {
  if (!streaming_ || finishing_) {
    if (done)
      done(false);
    return;
  }
  queue_.push_back({std::move(data), std::move(done)});
  pump();
}

void connection::finish() {
  if (!streaming_ || finishing_)
    return;
  finishing_ = true;
  pump();
}

void connection::on_gone(std::function<void()> f) {
  if (gone_) {
    f();
    return;
  }
  gone_fns_.push_back(std::move(f));
}

void connection::send_continue() {
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

void connection::read_piece() {
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

void connection::on_piece() {
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

void connection::pump() {
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

void connection::response_done(error_code ec, bool keep) {
  if (closed_)
    return;
  if (ec)
    return gone();
  if (!keep)
    return close();
  lowest().expires_never();
  wait_request(false);
}

} // namespace sandbox::http::detail
