#pragma once

// `sandbox serve --http`: HTTP/1.1 on the node's own Asio reactor
// (Boost.Beast), no thread per connection (docs/http.md). The JSON API
// under /v1 and MCP's Streamable HTTP transport at /mcp, behind bearer
// tokens that name identities.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <caf/fwd.hpp>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/errc.hpp"

namespace sandbox::http {

/// The door's limits (docs/http.md, "Limits").
struct limits {
  /// The request line and header fields together.
  size_t max_header_bytes = 16 * 1024;
  /// A JSON body (a file's body is streamed and has no cap).
  size_t max_json_bytes = 1024 * 1024;
  /// Connections open at once; one more is answered 503 and closed.
  size_t max_connections = 8192;
  /// From a request's first byte to the end of its header.
  std::chrono::milliseconds header_timeout{10000};
  /// With no request under way; and the longest a read or a write of a
  /// request or response may make no progress.
  std::chrono::milliseconds idle_timeout{60000};
  /// An NDJSON answer silent this long says `{"type":"heartbeat"}`.
  std::chrono::milliseconds heartbeat{30000};
};

struct server_config {
  /// Where to listen: an address (loopback unless TLS is on) and a port
  /// (0: a free one).
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  limits door;
  /// HTTPS: the server's PEM certificate (chain) and key; empty: plain
  /// HTTP (loopback only).
  std::string tls_cert;
  std::string tls_key;
  /// The token file (`IDENTITY TOKEN` lines); empty: one random token for
  /// identity `local`, written (mode 0600) to `generated_token_file`.
  std::string token_file;
  std::string generated_token_file;
  /// Identities that see and use every session of the node.
  std::vector<std::string> admins;
  /// serverInfo of MCP's initialize.
  std::string version = "unknown";
  /// How long an MCP session may stay unused before it ends.
  std::chrono::milliseconds mcp_idle{30 * 60 * 1000};
  /// Tool calls of all MCP sessions that run at once; later ones wait.
  size_t mcp_workers = 16;
};

class server {
public:
  /// Listens and serves on `ctx` (the node's reactor) for the node `node`
  /// of `sys`. Fails with `invalid_argument` for a bad token file,
  /// `io_error` when the address cannot be bound.
  static result<std::unique_ptr<server>>
  start(caf::actor_system& sys, actors::node_actor node,
        boost::asio::io_context& ctx, server_config cfg);

  /// Stops listening, ends the MCP sessions and closes every connection.
  ~server();

  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// The port it listens on.
  uint16_t port() const;

  /// Where the token of the generated identity is (empty with a token
  /// file).
  const std::string& token_path() const;

  /// Reads the token file again (SIGHUP); on an error the old tokens stay.
  result<size_t> reload_tokens();

  /// Connections open now.
  size_t connections() const;

  struct impl;

private:
  explicit server(std::shared_ptr<impl> i);
  std::shared_ptr<impl> impl_;
};

} // namespace sandbox::http
