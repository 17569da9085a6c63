#pragma once

// Nodes in other processes, over CAF's network layer (caf::io, or
// caf::openssl with mutual TLS): node addresses, publishing a node,
// connecting to one (`remote_node`) or to several (`node_pool`), and the
// liveness rules that keep a client from waiting on a node that is gone.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/fwd.hpp>
#include <caf/message_id.hpp>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/tls.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/errc.hpp"

namespace sandbox::actors {

/// `HOST:PORT` of a node; an IPv6 host is written in brackets
/// (`[::1]:4000`).
struct node_address {
  std::string host;
  uint16_t port = 0;

  /// `host:port`, or `[host]:port` when the host holds a colon.
  std::string to_string() const;
};

/// Parses `HOST:PORT` or `[IPV6]:PORT` (port 1-65535; 0 only with
/// `allow_port_zero`, for a bind).
/// @returns `invalid_argument` naming the input.
result<node_address> parse_node_address(std::string_view text,
                                        bool allow_port_zero = false);

/// Whether `host` is a loopback address or `localhost` (a node bound there
/// is reachable from this machine only).
bool is_loopback(std::string_view host);

/// Loads the network layer into `cfg` (see `configure_network`). The
/// heartbeat of connections, which notices a peer that vanished without
/// closing its connection within `remote_liveness`, starts with the first
/// `publish_node` or `connect_node` of the actor system (see
/// `start_liveness`).
void configure_remote(caf::actor_system_config& cfg, const tls_config& tls);

/// Both sides of a connection send a heartbeat this often.
constexpr std::chrono::seconds remote_heartbeat{1};

/// A connection that carried nothing, not even heartbeats, for this long is
/// closed: every pending call over it fails with `node_unreachable`.
constexpr std::chrono::seconds remote_liveness{4};

/// What a published node accepts from a connection (docs/security.md, "The
/// node's door").
struct door_config {
  /// The largest BASP frame (its payload, in bytes) the node reads. A peer
  /// that announces a larger one is disconnected before the node allocates
  /// anything for it. At least `min_frame_bytes`.
  uint32_t max_frame_bytes = 64u << 20;
  /// How long an accepted connection has to complete its handshake (TLS,
  /// then CAF's) before the node drops it; 0 waits for ever.
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds{10}};
  /// Without TLS, a connection from this machine's loopback is admitted
  /// only when the kernel says its socket belongs to the node's own uid or
  /// to one of these (sock_diag); any other is closed before the node
  /// reads or writes a byte. With TLS the certificate decides instead.
  std::vector<uint32_t> allowed_uids;
};

/// The smallest `door_config::max_frame_bytes`: a frame of the handshake
/// holds the node's name and interface.
constexpr uint32_t min_frame_bytes = 64u << 10;

/// Checks `cfg`.
/// @returns `invalid_argument` naming the bad value.
result<void> validate(const door_config& cfg);

/// Publishes `node` on `bind:port` (port 0: a free port), with TLS when
/// `tls` (the actor system must have been configured for it). Its
/// connections pass the checks of `door` (see `door_config`), and each
/// gets the client identity the node judges its requests by
/// (`node_config::admins`): the subject of its certificate with TLS, else
/// `uid:N` for a loopback peer, `address:IP` for any other.
/// @returns the port it listens on; `port_unavailable` or `io_error`
///   naming the address otherwise, `invalid_argument` for a bad `door`.
result<uint16_t> publish_node(caf::actor_system& sys, const node_actor& node,
                              const std::string& bind, uint16_t port, bool tls,
                              const door_config& door = {});

/// Connects to the node at `addr` (blocking) and remembers `addr` as its
/// name for error messages (`node_label`).
/// @returns `node_unreachable` naming the address when the node does not
///   answer, refuses the handshake or is not a sandbox node.
result<node_actor> connect_node(caf::actor_system& sys,
                                const node_address& addr, bool tls);

/// An actor system for the clients of remote nodes: sandbox's types and
/// the network layer (with TLS when `tls` is enabled).
class client_system {
public:
  explicit client_system(const tls_config& tls = {});
  ~client_system();

  caf::actor_system& system() noexcept {
    return *sys_;
  }

  bool tls() const noexcept {
    return tls_;
  }

private:
  system_config cfg_;
  bool tls_;
  std::unique_ptr<caf::actor_system> sys_;
};

using client_system_ptr = std::shared_ptr<client_system>;

/// A node in another process, for plain C++ code: `blocking_session::create`
/// and the lifecycle calls of `basic_node` work as with an `embedded_node`.
/// Sessions it creates are stopped by the node once this process is gone
/// (after the node's client grace period), unless created detached.
class remote_node : public basic_node {
public:
  /// Connects to `address` (`HOST:PORT`) with an actor system of its own.
  /// @returns `invalid_argument` for a bad address or TLS settings,
  ///   `node_unreachable` naming the address.
  static result<std::unique_ptr<remote_node>>
  connect(const std::string& address, const tls_config& tls = {});

  /// Connects to `address` through the shared actor system `sys`.
  static result<std::unique_ptr<remote_node>>
  connect(client_system_ptr sys, const std::string& address);

  ~remote_node() override;

  caf::actor_system& system() noexcept override {
    return sys_->system();
  }

  const node_actor& node() const noexcept override {
    return node_;
  }

  /// The address it was connected to, as given.
  const std::string& address() const noexcept {
    return address_;
  }

  remote_node(client_system_ptr sys, node_actor node, std::string address)
    : sys_(std::move(sys)),
      node_(std::move(node)),
      address_(std::move(address)) {
  }

private:
  // Declared first, destroyed last: the node handle is a proxy of `sys_`.
  client_system_ptr sys_;
  node_actor node_;
  std::string address_;
};

/// A session of a `node_pool`, with the node that holds it.
struct pooled_session {
  std::string address;
  session_info info;
};

/// Several remote nodes behind one actor system: new sessions go to the
/// node with the fewest running children; a session stays on its node.
class node_pool {
public:
  /// Connects to every address; nodes that cannot be reached are left out
  /// (see `unreachable`). Fails only when none answers: then with the
  /// `node_unreachable` error of the first address.
  static result<node_pool> connect(const std::vector<std::string>& addresses,
                                   const tls_config& tls = {});

  /// The nodes connected to.
  const std::vector<std::shared_ptr<remote_node>>& nodes() const noexcept {
    return nodes_;
  }

  /// The errors of the addresses that could not be reached.
  const std::vector<sandbox::error>& unreachable() const noexcept {
    return unreachable_;
  }

  /// The node that answers a `list` with the fewest running children
  /// (ties: the first given); nodes that do not answer within `wait` are
  /// skipped. `node_unreachable` when none answers.
  result<std::shared_ptr<remote_node>>
  least_loaded(std::chrono::milliseconds wait = std::chrono::seconds{2});

  /// Creates a session on the least loaded node.
  result<std::pair<blocking_session, std::shared_ptr<remote_node>>>
  create(session_config cfg = {});

  /// The node holding the session `id`, and the session;
  /// `session_not_found` when no node has it.
  result<std::pair<blocking_session, std::shared_ptr<remote_node>>>
  find(const std::string& id);

  /// The sessions of every node that answers, each with its node's address.
  result<std::vector<pooled_session>> list();

  /// Stops the session `id` on whichever node holds it.
  result<stop_receipt> stop_session(const std::string& id);

private:
  client_system_ptr sys_;
  std::vector<std::shared_ptr<remote_node>> nodes_;
  std::vector<sandbox::error> unreachable_;
};

} // namespace sandbox::actors
