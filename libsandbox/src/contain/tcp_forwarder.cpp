#include "sandbox/contain/tcp_forwarder.hpp"

#include <array>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fmt/format.h>

#include "sandbox/io/reactor.hpp"
#include "sandbox/log.hpp"

namespace sandbox {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {

/// One forwarded connection: the accepted socket and the one to the
/// destination; direction 0 pumps client to server, 1 server to client.
struct connection {
  connection(tcp::socket accepted, asio::io_context& ctx)
    : side{std::move(accepted), tcp::socket{ctx}} {
  }
  std::array<tcp::socket, 2> side;
  std::array<std::array<char, 64 * 1024>, 2> buf;
  /// The budget it took a unit from (none: uncounted).
  std::shared_ptr<connection_budget> budget;
  /// Directions still pumping.
  int open = 2;
  bool closed = false;
};

using connection_ptr = std::shared_ptr<connection>;

} // namespace

// Every handler and every public member locks `mtx` before it touches a
// socket: an asio socket object may not be used by two threads at once,
// and `stop` closes sockets from whichever thread calls it. No composed
// operation (async_write) runs: its intermediate steps would touch a
// socket without the lock.
struct tcp_forwarder::impl : std::enable_shared_from_this<impl> {
  impl(asio::io_context& ctx) : ctx(ctx), acceptor(ctx), retry(ctx) {
  }

  asio::io_context& ctx;
  /// Guards everything below.
  mutable std::mutex mtx;
  bool stopped = false;
  tcp::acceptor acceptor;
  asio::steady_timer retry;
  tcp::endpoint dest;
  socket_factory factory;
  std::string name;
  std::shared_ptr<connection_budget> budget;
  std::set<connection_ptr> conns;

  void accept();
  void on_accepted(tcp::socket s);
  void pump(const connection_ptr& c, int dir);
  void write(const connection_ptr& c, int dir, size_t at, size_t n);
  void end_direction(const connection_ptr& c, int dir);
  void close(const connection_ptr& c, bool reset);
};

namespace {

/// Closes `s`, with a reset (RST) when `reset` is set.
void close_socket(tcp::socket& s, bool reset) {
  error_code ec;
  if (reset && s.is_open())
    s.set_option(asio::socket_base::linger(true, 0), ec);
  s.close(ec);
}

} // namespace

void tcp_forwarder::impl::accept() {
  acceptor.async_accept(
    [self = shared_from_this()](const error_code& ec, tcp::socket s) {
      std::lock_guard<std::mutex> guard{self->mtx};
      if (self->stopped)
        return;
      if (ec) {
        if (ec == asio::error::operation_aborted)
          return;
        // Out of descriptors, most likely: try again a little later
        // rather than spinning.
        log::logger()->warn("{}: accept: {}", self->name, ec.message());
        self->retry.expires_after(std::chrono::milliseconds{100});
        self->retry.async_wait([self](const error_code& ec) {
          std::lock_guard<std::mutex> guard{self->mtx};
          if (!ec && !self->stopped)
            self->accept();
        });
        return;
      }
      self->on_accepted(std::move(s));
      self->accept();
    });
}

void tcp_forwarder::impl::on_accepted(tcp::socket s) {
  // Over the budget: refused before its buffers and its second socket
  // exist.
  auto taken = budget;
  if (taken && !taken->take(name)) {
    log::logger()->debug("{}: connection refused: {} connections are open "
                         "(max_connections)",
                         name, taken->max());
    close_socket(s, true);
    return;
  }
  auto c = std::make_shared<connection>(std::move(s), ctx);
  c->budget = std::move(taken);
  result<unique_fd> fd = error{errc::unsupported, "nothing to forward to yet"};
  if (factory)
    fd = factory();
  error_code ec;
  if (fd)
    c->side[1].assign(dest.protocol(), fd->get(), ec);
  if (!fd || ec) {
    log::logger()->debug("{}: connection refused: {}", name,
                         fd ? ec.message() : fd.error().message);
    close_socket(c->side[0], true);
    if (c->budget)
      c->budget->give_back();
    return;
  }
  fd->release();
  conns.insert(c);
  c->side[1].async_connect(dest, [self = shared_from_this(),
                                  c](const error_code& ec) {
    std::lock_guard<std::mutex> guard{self->mtx};
    if (c->closed)
      return;
    if (ec) {
      // Nothing listens there (or it cannot be reached): the client learns
      // it at once, as a reset.
      self->close(c, true);
      return;
    }
    self->pump(c, 0);
    self->pump(c, 1);
  });
}

void tcp_forwarder::impl::pump(const connection_ptr& c, int dir) {
  c->side[dir].async_read_some(asio::buffer(c->buf[dir]),
                               [self = shared_from_this(), c,
                                dir](const error_code& ec, size_t n) {
                                 std::lock_guard<std::mutex> guard{self->mtx};
                                 if (c->closed)
                                   return;
                                 if (ec == asio::error::eof) {
                                   self->end_direction(c, dir);
                                   return;
                                 }
                                 if (ec) {
                                   self->close(c, true);
                                   return;
                                 }
                                 self->write(c, dir, 0, n);
                               });
}

void tcp_forwarder::impl::write(const connection_ptr& c, int dir, size_t at,
                                size_t n) {
  c->side[1 - dir].async_write_some(
    asio::buffer(c->buf[dir].data() + at, n - at),
    [self = shared_from_this(), c, dir, at, n](const error_code& ec,
                                               size_t written) {
      std::lock_guard<std::mutex> guard{self->mtx};
      if (c->closed)
        return;
      if (ec) {
        self->close(c, true);
        return;
      }
      if (at + written < n)
        self->write(c, dir, at + written, n);
      else
        self->pump(c, dir);
    });
}

void tcp_forwarder::impl::end_direction(const connection_ptr& c, int dir) {
  // The half-close travels: the other side reads EOF too.
  error_code ec;
  c->side[1 - dir].shutdown(tcp::socket::shutdown_send, ec);
  if (--c->open == 0)
    close(c, false);
}

void tcp_forwarder::impl::close(const connection_ptr& c, bool reset) {
  c->closed = true;
  close_socket(c->side[0], reset);
  close_socket(c->side[1], reset);
  if (conns.erase(c) != 0 && c->budget)
    c->budget->give_back();
}

connection_budget::connection_budget(size_t max, refusal_callback on_refused)
  : max_(max), on_refused_(std::move(on_refused)) {
}

bool connection_budget::take(const std::string& forwarder) {
  auto now = in_use_.load(std::memory_order_relaxed);
  do {
    if (now >= max_) {
      if (!refusing_.exchange(true) && on_refused_)
        on_refused_(forwarder);
      return false;
    }
  } while (
    !in_use_.compare_exchange_weak(now, now + 1, std::memory_order_relaxed));
  return true;
}

void connection_budget::give_back() noexcept {
  in_use_.fetch_sub(1, std::memory_order_relaxed);
  refusing_.store(false);
}

size_t connection_budget::in_use() const noexcept {
  return in_use_.load(std::memory_order_relaxed);
}

result<std::shared_ptr<tcp_forwarder>>
tcp_forwarder::start(reactor& r, unique_fd listener, const sockaddr* dest,
                     socklen_t dest_len, socket_factory factory,
                     std::string name,
                     std::shared_ptr<connection_budget> budget) {
  auto p = std::make_shared<impl>(r.context());
  std::memcpy(p->dest.data(), dest, dest_len);
  p->dest.resize(dest_len);
  p->factory = std::move(factory);
  p->name = std::move(name);
  p->budget = std::move(budget);
  error_code ec;
  auto proto = dest->sa_family == AF_INET6 ? tcp::v6() : tcp::v4();
  sockaddr_storage local{};
  socklen_t local_len = sizeof(local);
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&local),
                    &local_len)
      == 0)
    proto = local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4();
  p->acceptor.assign(proto, listener.get(), ec);
  if (ec)
    return error{errc::io_error, fmt::format("{}: cannot watch the listener: "
                                             "{}",
                                             p->name, ec.message())};
  listener.release();
  {
    std::lock_guard<std::mutex> guard{p->mtx};
    p->accept();
  }
  return std::make_shared<tcp_forwarder>(std::move(p));
}

void tcp_forwarder::set_factory(socket_factory factory) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->factory = std::move(factory);
}

void tcp_forwarder::stop() noexcept {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->stopped = true;
  error_code ec;
  impl_->acceptor.close(ec);
  impl_->retry.cancel();
  for (auto& c : impl_->conns) {
    c->closed = true;
    close_socket(c->side[0], true);
    close_socket(c->side[1], true);
    if (c->budget)
      c->budget->give_back();
  }
  impl_->conns.clear();
  // The factory may hold a descriptor (the init's pidfd).
  impl_->factory = nullptr;
}

void tcp_forwarder::set_budget(std::shared_ptr<connection_budget> budget) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->budget = std::move(budget);
}

size_t tcp_forwarder::connections() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return impl_->conns.size();
}

tcp_forwarder::~tcp_forwarder() {
  stop();
}

} // namespace sandbox
