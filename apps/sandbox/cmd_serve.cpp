// `sandbox serve`: runs a node and publishes its node actor over CAF's
// network layer (caf::io, or caf::openssl with mutual TLS), so that
// `--node HOST:PORT` and `remote_node` reach it (docs/distributed.md); with
// --http, also HTTP: the JSON API and MCP (docs/http.md).

#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli.hpp"
#include "http/server.hpp"
#include "interrupt.hpp"
#include "runtime.hpp"
#include "sandbox/actors/node.hpp"
#include "sandbox/actors/publish_accept.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/fs/session_directories.hpp"

namespace sandbox::cli {

namespace {

/// The port `serve` listens on without --port.
constexpr uint16_t default_serve_port = 4800;

struct serve_flags {
  std::string bind = "127.0.0.1";
  std::string port = std::to_string(default_serve_port);
  std::string base_dir;
  std::string client_grace = "30";
  std::string max_frame_bytes
    = std::to_string(actors::door_config{}.max_frame_bytes);
  std::string handshake_timeout = "10";
  std::vector<std::string> allow_uids;
  std::vector<std::string> admins;
  std::string session_ids;
  /// HTTP (docs/http.md): ADDR:PORT, empty: none.
  std::string http;
  std::string token_file;
  std::string http_max_header = std::to_string(http::limits{}.max_header_bytes);
  std::string http_max_body = std::to_string(http::limits{}.max_json_bytes);
  std::string http_max_connections
    = std::to_string(http::limits{}.max_connections);
  std::string http_header_timeout = "10";
  std::string http_idle_timeout = "60";
  std::string mcp_idle = "1800";
  std::string http_heartbeat = "30";
};

/// The HTTP server's settings from the flags (docs/http.md).
result<http::server_config> http_config(const global_options& g,
                                        const serve_flags& f) {
  http::server_config c;
  auto colon = f.http.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return error{errc::invalid_argument,
                 fmt::format("--http expects ADDR:PORT (e.g. 127.0.0.1:8080), "
                             "got \"{}\"",
                             f.http)};
  c.address = f.http.substr(0, colon);
  if (c.address.size() > 2 && c.address.front() == '['
      && c.address.back() == ']')
    c.address = c.address.substr(1, c.address.size() - 2);
  auto port = parse_integer("--http", f.http.substr(colon + 1), 0, 65535);
  if (!port)
    return port.error();
  c.port = static_cast<uint16_t>(*port);
  auto tls = tls_of(g);
  if (!actors::is_loopback(c.address)
      && (!tls.enabled() || f.token_file.empty()))
    return error{errc::invalid_argument,
                 fmt::format("serve: --http {} is not a loopback address: "
                             "HTTP reachable from other machines requires "
                             "TLS (--tls-cert, --tls-key, --tls-ca) and "
                             "--token-file",
                             f.http)};
  // HTTPS with the node's certificate (clients prove themselves with
  // their token, not a certificate).
  c.tls_cert = tls.certificate_file;
  c.tls_key = tls.key_file;
  c.token_file = f.token_file;
  auto number = [](const char* name, const std::string& text, int64_t lo,
                   int64_t hi, auto& out) -> result<void> {
    auto n = parse_integer(name, text, lo, hi);
    if (!n)
      return n.error();
    out = static_cast<std::remove_reference_t<decltype(out)>>(*n);
    return {};
  };
  for (auto ok : {number("--http-max-header", f.http_max_header, 1024, 1 << 20,
                         c.door.max_header_bytes),
                  number("--http-max-body", f.http_max_body, 1024, 1 << 30,
                         c.door.max_json_bytes),
                  number("--http-max-connections", f.http_max_connections, 1,
                         1 << 20, c.door.max_connections)})
    if (!ok)
      return ok.error();
  for (auto [name, text, out] :
       {std::tuple{"--http-header-timeout", &f.http_header_timeout,
                   &c.door.header_timeout},
        std::tuple{"--http-idle-timeout", &f.http_idle_timeout,
                   &c.door.idle_timeout},
        std::tuple{"--mcp-idle", &f.mcp_idle, &c.mcp_idle},
        std::tuple{"--http-heartbeat", &f.http_heartbeat, &c.door.heartbeat}}) {
    auto t = parse_seconds(name, *text);
    if (!t)
      return t.error();
    if (t->count() <= 0)
      return error{errc::invalid_argument,
                   fmt::format("{} must be more than 0 seconds", name)};
    *out = *t;
  }
  c.admins = f.admins;
  c.version = SANDBOX_VERSION;
  return c;
}

/// Waits until SIGTERM, SIGINT or SIGHUP arrives.
void wait_for_interrupt() {
  std::mutex mtx;
  std::condition_variable cv;
  bool interrupted = false;
  // No deadline: the stop of every session takes what it takes.
  interrupt_guard guard{[&] {
                          std::lock_guard<std::mutex> lock{mtx};
                          interrupted = true;
                          cv.notify_all();
                        },
                        false};
  std::unique_lock<std::mutex> lock{mtx};
  // A signal that came before the guard is already recorded.
  cv.wait(lock, [&] { return interrupted || interrupted_by() != 0; });
}

int serve(const global_options& g, const serve_flags& f) {
  auto port = parse_integer("--port", f.port, 0, 65535);
  if (!port)
    return usage_error(g, port.error().message);
  auto grace = parse_seconds("--client-grace", f.client_grace);
  if (!grace)
    return usage_error(g, grace.error().message);
  actors::door_config door;
  auto frame = parse_integer("--max-frame-bytes", f.max_frame_bytes,
                             actors::min_frame_bytes, UINT32_MAX);
  if (!frame)
    return usage_error(g, frame.error().message);
  door.max_frame_bytes = static_cast<uint32_t>(*frame);
  auto handshake = parse_seconds("--handshake-timeout", f.handshake_timeout);
  if (!handshake)
    return usage_error(g, handshake.error().message);
  door.handshake_timeout = *handshake;
  for (auto& text : f.allow_uids) {
    auto uid = parse_integer("--allow-uid", text, 0, UINT32_MAX - 1);
    if (!uid)
      return usage_error(g, uid.error().message);
    door.allowed_uids.push_back(static_cast<uint32_t>(*uid));
  }
  if (f.bind.empty())
    return usage_error(g, "serve: --bind expects an address, got \"\"");
  std::optional<http::server_config> hcfg;
  if (!f.http.empty()) {
    auto c = http_config(g, f);
    if (!c)
      return c.error().code == errc::invalid_argument
               ? usage_error(g, c.error().message)
               : report(g, c.error());
    hcfg = std::move(*c);
  }
  auto tls = tls_of(g);
  if (!actors::is_loopback(f.bind) && !tls.enabled())
    return usage_error(g, fmt::format("serve: --bind {} is not a loopback "
                                      "address: a node reachable from other "
                                      "machines requires mutual TLS "
                                      "(--tls-cert, --tls-key and --tls-ca)",
                                      f.bind));
  actors::runtime_config rcfg;
  // The serving process is only a node: every orphan re-parented to it is
  // one of its sessions' descendants.
  rcfg.reap_all_orphans = true;
  if (auto mode = parse_isolation(g.isolation); mode)
    rcfg.isolation = *mode;
  rcfg.allow_net = g.allow_net;
  if (g.limits)
    rcfg.limits = *g.limits;
  if (!f.session_ids.empty()) {
    auto colon = f.session_ids.find(':');
    if (colon == std::string::npos)
      return usage_error(g, fmt::format("--session-ids expects BASE:COUNT, "
                                        "got \"{}\"",
                                        f.session_ids));
    auto base = parse_integer("--session-ids", f.session_ids.substr(0, colon),
                              1, UINT32_MAX - 2);
    if (!base)
      return usage_error(g, base.error().message);
    auto count = parse_integer("--session-ids", f.session_ids.substr(colon + 1),
                               0, UINT32_MAX - 1 - *base);
    if (!count)
      return usage_error(g, count.error().message);
    rcfg.isolation_uid_base = static_cast<uint32_t>(*base);
    rcfg.isolation_uid_count = static_cast<uint32_t>(*count);
  }
  for (auto [from, to] :
       {std::pair{&g.allow_read, &rcfg.isolation_allow_read},
        std::pair{&g.allow_write, &rcfg.isolation_allow_write}})
    for (auto& p : *from)
      to->push_back(std::filesystem::absolute(p).lexically_normal());
  // Commands of contained sessions never read the node's key.
  if (!g.tls_key.empty())
    rcfg.isolation_deny.push_back(std::filesystem::absolute(g.tls_key));
  if (auto ok = actors::validate(rcfg); !ok)
    return report(g, ok.error());
  auto rt = actors::make_runtime(rcfg);
  actors::node_config ncfg;
  // By default sessions without a working directory of their own live in
  // `<tmp>/sandbox-<uid>/sessions`, below the private directory of the
  // default homes.
  auto private_dir = user_directory(rt->config().temp_directory);
  ncfg.base_directory = f.base_dir.empty() ? private_dir + "/sessions"
                                           : f.base_dir;
  ncfg.client_grace = *grace;
  ncfg.admins = f.admins;
  auto cannot_create = [&](errc code, const std::string& why) {
    return report(g, {code, fmt::format("serve: cannot create the base "
                                        "directory {}: {}",
                                        ncfg.base_directory, why)});
  };
  // Made and checked as for the homes: never followed through a symlink
  // another user planted.
  if (f.base_dir.empty()) {
    if (auto ok = make_private_directory(private_dir); !ok)
      return cannot_create(ok.error().code, ok.error().message);
  }
  std::error_code ec;
  std::filesystem::create_directories(ncfg.base_directory, ec);
  if (ec)
    return cannot_create(errc::io_error, ec.message());
  if (auto ok = actors::validate(ncfg); !ok)
    return report(g, ok.error());
  // Never destroyed: the process ends with std::_Exit once every session
  // is stopped, without waiting for the network layer to wind down.
  auto* cfg = new actors::system_config;
  actors::configure_remote(*cfg, tls);
  actors::configure_scheduler(*cfg, ncfg.scheduler);
  auto* sys = new caf::actor_system{*cfg};
  auto node = actors::spawn_node(*sys, rt, ncfg);
  // Many clients come and go: see publish_accept.hpp.
  actors::renumber_node_connections();
  auto bound = actors::publish_node(
    *sys, node, f.bind, static_cast<uint16_t>(*port), tls.enabled(), door);
  if (!bound)
    return report(g, bound.error());
  auto address = actors::node_address{f.bind, *bound}.to_string();
  std::unique_ptr<http::server> web;
  if (hcfg) {
    hcfg->generated_token_file = fmt::format("{}/http-{}.token", private_dir,
                                             ::getpid());
    if (auto ok = make_private_directory(private_dir); !ok)
      return report(g, ok.error());
    auto started = http::server::start(*sys, node, rt->reactor().context(),
                                       *hcfg);
    if (!started)
      return report(g, started.error());
    web = std::move(*started);
    // SIGHUP re-reads the token file instead of stopping the node.
    on_hangup([w = web.get()] {
      if (auto n = w->reload_tokens(); n)
        spdlog::info("http: token file read again: {} token(s)", *n);
      else
        spdlog::error("http: {} (the old tokens stay)", n.error().message);
    });
  }
  nlohmann::ordered_json http_json = nullptr;
  if (web)
    http_json = {{"address", hcfg->address},
                 {"port", web->port()},
                 {"tls", !hcfg->tls_cert.empty()},
                 {"token_file", hcfg->token_file.empty() ? web->token_path()
                                                         : hcfg->token_file}};
  if (g.json)
    print_json({{"type", "listening"},
                {"address", f.bind},
                {"port", *bound},
                {"tls", tls.enabled()},
                {"http", http_json}});
  else
    emit(1, fmt::format("listening on {}\n", address));
  if (web && !g.json)
    emit(1, fmt::format(
              "http on {}://{} token file {}\n",
              hcfg->tls_cert.empty() ? "http" : "https",
              actors::node_address{hcfg->address, web->port()}.to_string(),
              http_json["token_file"].get<std::string>()));
  spdlog::info("node listening on {}{} (base directory {}, client grace "
               "{} ms)",
               address, tls.enabled() ? " with mutual TLS" : "",
               ncfg.base_directory, ncfg.client_grace.count());
  wait_for_interrupt();
  spdlog::info("signal {}: stopping every session", interrupted_by());
  on_hangup(nullptr);
  if (web) {
    // The MCP sessions end first (their calls cancelled), then the rest.
    auto token = web->token_path();
    web.reset();
    if (!token.empty())
      ::unlink(token.c_str());
  }
  caf::scoped_actor self{*sys};
  self->request(node, caf::infinite, actors::stop_atom_v)
    .receive(
      [](uint32_t n) { spdlog::info("stopped {} session(s); exiting", n); },
      [](caf::error& err) {
        spdlog::error("stopping the sessions failed: {}",
                      actors::error_message(err));
      });
  forget_interrupt();
  return exit_ok;
}

} // namespace

command add_serve(CLI::App& app, global_options& g) {
  auto flags = std::make_shared<serve_flags>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "serve", "run a node that clients reach with --node HOST:PORT; prints "
             "`listening on ADDR:PORT` once ready; SIGTERM or SIGINT stops "
             "every session and exits 0");
  cmd.sub->add_option("--bind", flags->bind,
                      "address to listen on (default 127.0.0.1); anything "
                      "but loopback requires --tls-cert, --tls-key and "
                      "--tls-ca");
  cmd.sub->add_option("--port", flags->port,
                      fmt::format("TCP port (default {}; 0 picks a free "
                                  "one)",
                                  default_serve_port));
  cmd.sub->add_option("--base-dir", flags->base_dir,
                      "where sessions without --workdir get their "
                      "directory (default $TMPDIR/sandbox-UID/sessions)");
  cmd.sub->add_option("--client-grace", flags->client_grace,
                      "seconds the sessions of a disconnected client live "
                      "on before they are stopped (default 30; detached "
                      "sessions stay)");
  cmd.sub->add_option("--max-frame-bytes", flags->max_frame_bytes,
                      fmt::format("the largest message a client may send, "
                                  "in bytes; a connection that announces a "
                                  "larger one is dropped (default {}, at "
                                  "least {})",
                                  actors::door_config{}.max_frame_bytes,
                                  actors::min_frame_bytes));
  cmd.sub->add_option("--handshake-timeout", flags->handshake_timeout,
                      "seconds a new connection has to complete its "
                      "handshake before it is dropped (default 10; 0 = "
                      "none)");
  cmd.sub->add_option("--allow-uid", flags->allow_uids,
                      "without TLS, also admit loopback clients of this uid "
                      "(repeatable; the node's own user is always admitted, "
                      "any other refused)");
  cmd.sub->add_option("--admin", flags->admins,
                      "a client identity that sees, uses and stops every "
                      "session (repeatable): a certificate subject such as "
                      "CN=operator, or uid:N; others see only their own");
  cmd.sub->add_option("--session-ids", flags->session_ids,
                      fmt::format("BASE:COUNT: the host uids (and gids) "
                                  "contained sessions take one of their own "
                                  "from, where the node is root (default "
                                  "{}:{}; COUNT 0: sessions keep the node's "
                                  "uid); give each node of a machine its own "
                                  "range",
                                  default_session_id_base,
                                  default_session_id_count));
  cmd.sub->add_option("--http", flags->http,
                      "also serve HTTP on ADDR:PORT (docs/http.md): the "
                      "JSON API under /v1 and MCP at /mcp; HTTPS with "
                      "--tls-cert/--tls-key, which any address but loopback "
                      "requires, with --token-file");
  cmd.sub->add_option("--token-file", flags->token_file,
                      "HTTP bearer tokens, lines `IDENTITY TOKEN` (re-read "
                      "on SIGHUP); without it serve makes one token for "
                      "identity `local` and prints the file that holds it");
  cmd.sub->add_option("--http-max-header", flags->http_max_header,
                      "bytes of a request's line and header fields (default "
                      "16384; more: 431)");
  cmd.sub->add_option("--http-max-body", flags->http_max_body,
                      "bytes of a JSON body (default 1048576; more: 413; "
                      "file bodies are streamed and have no cap)");
  cmd.sub->add_option("--http-max-connections", flags->http_max_connections,
                      "HTTP connections open at once (default 8192; one more "
                      "is answered 503)");
  cmd.sub->add_option("--http-header-timeout", flags->http_header_timeout,
                      "seconds a client has to send a request's header "
                      "(default 10)");
  cmd.sub->add_option("--http-idle-timeout", flags->http_idle_timeout,
                      "seconds a connection may make no progress (default "
                      "60)");
  cmd.sub->add_option("--http-heartbeat", flags->http_heartbeat,
                      "seconds an NDJSON answer may be silent before it "
                      "says {\"type\":\"heartbeat\"} (default 30)");
  cmd.sub->add_option("--mcp-idle", flags->mcp_idle,
                      "seconds an MCP session over HTTP may stay unused "
                      "before it ends (default 1800)");
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, flags] { return serve(g, *flags); };
  return cmd;
}

} // namespace sandbox::cli
