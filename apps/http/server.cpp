#include "http/server.hpp"

#include <future>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <caf/actor_system.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api.hpp"
#include "connection.hpp"
#include "mcp_http.hpp"
#include "openapi.hpp"
#include "sandbox/validation.hpp"
#include "tokens.hpp"

namespace sandbox::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

struct server::impl : std::enable_shared_from_this<impl> {
  impl(caf::actor_system& sys, actors::node_actor node, net::io_context& ctx,
       server_config c)
    : cfg(std::move(c)),
      ctx(ctx),
      acceptor(ctx),
      retry(ctx),
      api{sys, std::move(node), cfg.admins, cfg.door, {}},
      mcp(api, ctx, mcp_config{cfg.version, cfg.mcp_idle, cfg.mcp_workers}) {
  }

  server_config cfg;
  net::io_context& ctx;
  tcp::acceptor acceptor;
  net::steady_timer retry;
  std::shared_ptr<connection_hub> hub = std::make_shared<connection_hub>();
  token_store tokens;
  api_context api;
  mcp_endpoint mcp;
  bool stopped = false;
  /// Listening on a loopback address: Host and Origin must name one.
  bool loopback = true;

  /// Whether a Host (`NAME[:PORT]`) or Origin (`SCHEME://NAME[:PORT]`)
  /// names a loopback host.
  static bool names_loopback(std::string value) {
    if (auto scheme = value.find("://"); scheme != std::string::npos)
      value.erase(0, scheme + 3);
    std::string host;
    if (!value.empty() && value.front() == '[') {
      auto close = value.find(']');
      if (close == std::string::npos)
        return false;
      host = value.substr(1, close - 1);
    } else {
      host = value.substr(0, value.find(':'));
    }
    for (auto& c : host)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
  }

  void route(const exchange_ptr& ex) {
    // DNS rebinding: a page of another site that a browser was made to
    // send here names that site in Host or Origin. A loopback node
    // answers only requests that name a loopback host.
    if (loopback) {
      for (auto* field : {"host", "origin"}) {
        auto& value = ex->head().header(field);
        if (!value.empty() && !names_loopback(value))
          return ex->fail(status::forbidden, "forbidden_host",
                          fmt::format("{} {} is not this node's: a loopback "
                                      "node answers requests for localhost, "
                                      "127.0.0.1 or [::1] only",
                                      field == std::string{"host"} ? "Host"
                                                                   : "Origin",
                                      quote_for_message(value)));
      }
    }
    auto& seg = ex->head().segments;
    if (!seg.empty() && seg[0] == "v1") {
      if (seg.size() == 2 && seg[1] == "openapi.json") {
        if (ex->head().method != verb::get)
          return method_not_allowed(ex, "GET");
        return ex->reply_bytes(status::ok, "application/json",
                               std::string{openapi_json()});
      }
      return route_v1(api, ex);
    }
    if (seg.size() == 1 && seg[0] == "mcp")
      return mcp.serve(ex);
    ex->fail(status::not_found, "not_found",
             fmt::format("no route {} (the API is below /v1, MCP at /mcp)",
                         ex->head().target));
  }

  void accept() {
    acceptor.async_accept(net::make_strand(ctx), [self = shared_from_this()](
                                                   boost::system::error_code ec,
                                                   tcp::socket socket) {
      if (self->stopped)
        return;
      if (ec) {
        // Out of descriptors, say: try again soon instead of spinning.
        spdlog::warn("http: accept: {}", ec.message());
        self->retry.expires_after(std::chrono::milliseconds{100});
        self->retry.async_wait([self](boost::system::error_code e) {
          if (!e && !self->stopped)
            self->accept();
        });
        return;
      }
      if (self->hub->open.load() >= self->cfg.door.max_connections)
        refuse_connection(std::move(socket), *self->hub);
      else
        serve_connection(std::move(socket), self->hub);
      self->accept();
    });
  }
};

result<std::unique_ptr<server>>
server::start(caf::actor_system& sys, actors::node_actor node,
              net::io_context& ctx, server_config cfg) {
  boost::system::error_code ec;
  auto address = net::ip::make_address(cfg.address, ec);
  if (ec)
    return error{errc::invalid_argument,
                 fmt::format("--http: {} is not an IP address", cfg.address)};
  auto i = std::make_shared<impl>(sys, std::move(node), ctx, cfg);
  if (!cfg.token_file.empty()) {
    if (auto n = i->tokens.load(cfg.token_file); !n)
      return n.error();
  } else if (auto ok = i->tokens.generate("local", cfg.generated_token_file);
             !ok) {
    return ok.error();
  }
  i->hub->door = cfg.door;
  if (!cfg.tls_cert.empty()) {
    namespace ssl = boost::asio::ssl;
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2
                     | ssl::context::no_sslv3 | ssl::context::no_tlsv1
                     | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
    boost::system::error_code e;
    ctx->use_certificate_chain_file(cfg.tls_cert, e);
    if (e)
      return error{errc::invalid_argument,
                   fmt::format("--tls-cert {}: {}", cfg.tls_cert, e.message())};
    ctx->use_private_key_file(cfg.tls_key, ssl::context::pem, e);
    if (e)
      return error{errc::invalid_argument,
                   fmt::format("--tls-key {}: {}", cfg.tls_key, e.message())};
    i->hub->tls = std::move(ctx);
  }
  i->loopback = address.is_loopback();
  i->hub->identify = [w = std::weak_ptr<impl>{i}](
                       const std::string& auth) -> std::optional<std::string> {
    if (auto self = w.lock())
      return self->tokens.identify(auth);
    return std::nullopt;
  };
  i->hub->route = [w = std::weak_ptr<impl>{i}](const exchange_ptr& ex) {
    if (auto self = w.lock())
      self->route(ex);
  };
  tcp::endpoint ep{address, cfg.port};
  auto& a = i->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec)
    a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    a.bind(ep, ec);
  if (!ec)
    a.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return error{errc::io_error,
                 fmt::format("--http: cannot listen on {}:{}: {}", cfg.address,
                             cfg.port, ec.message())};
  i->accept();
  return std::unique_ptr<server>{new server{std::move(i)}};
}

server::server(std::shared_ptr<impl> i) : impl_(std::move(i)) {
}

server::~server() {
  // On the reactor: the acceptor and timers are used there only.
  auto i = impl_;
  std::promise<void> closed;
  net::post(i->ctx, [i, &closed] {
    i->stopped = true;
    boost::system::error_code ignored;
    i->acceptor.close(ignored);
    i->retry.cancel();
    closed.set_value();
  });
  closed.get_future().wait();
  impl_->mcp.shutdown();
  close_connections(*impl_->hub);
}

uint16_t server::port() const {
  return impl_->acceptor.local_endpoint().port();
}

const std::string& server::token_path() const {
  static const std::string none;
  return impl_->cfg.token_file.empty() ? impl_->cfg.generated_token_file : none;
}

result<size_t> server::reload_tokens() {
  if (impl_->cfg.token_file.empty())
    return size_t{1};
  return impl_->tokens.load(impl_->cfg.token_file);
}

size_t server::connections() const {
  return impl_->hub->open.load();
}

} // namespace sandbox::http
