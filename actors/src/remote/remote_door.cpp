#include "remote/remote_door.hpp"

// CAF 0.17.6's BASP broker reads a connection through a scribe: a fixed
// 32-byte header first, then exactly the header's `payload_len` bytes, a
// size it takes as is (up to 4 GiB) and the stream allocates (and zeroes)
// before it reads a byte of the payload. It drops a silent connection only
// once its handshake is done (the heartbeat). caf::io and caf::openssl
// give no hook for either, so the node publishes through doorman and
// scribe classes of its own, built from the same parts as CAF's (a stream
// over the socket, with caf::openssl's session for TLS), and hands them to
// the BASP broker the way CAF's middleman actor does.

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include "remote/peer_identity.hpp"
#include "remote/peer_uid.hpp"
#include "remote/tls_peer.hpp"
#include "sandbox/log.hpp"
#include <caf/actor_cast.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/basp/header.hpp>
#include <caf/io/basp/message_type.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/io/scribe.hpp>
#include <caf/openssl/session.hpp>
#include <caf/policy/tcp.hpp>
#include <caf/send.hpp>

namespace sandbox::actors::detail {

namespace {

namespace net = caf::io::network;

std::atomic<uint64_t> oversized_frames{0};
std::atomic<uint64_t> late_handshakes{0};
std::atomic<uint64_t> foreign_uids{0};
std::atomic<uint64_t> false_node_ids{0};

class guarded_scribe;

/// What the doorman of one published node and its connections share. The
/// connections still in their handshake are known by number; the warden
/// (an actor: CAF's clock only delivers messages) wakes up at each one's
/// deadline and has the multiplexer thread drop it if it is still there.
struct door_state {
  door_state(const door_config& c, net::default_multiplexer& m, caf::node_id h)
    : cfg(c), mpx(m), own_uid(::geteuid()), home(std::move(h)) {
  }

  const door_config cfg;
  net::default_multiplexer& mpx;
  /// The node's user: always admitted on loopback.
  const uint32_t own_uid;
  /// The node id of the actor system the door's node lives in.
  const caf::node_id home;
  caf::actor warden;

  /// Starts the deadline of `s` (on the multiplexer thread).
  void watch(guarded_scribe* s);

  /// `id` finished its handshake or is gone.
  void forget(uint64_t id) {
    std::lock_guard<std::mutex> guard{mtx};
    pending.erase(id);
  }

  /// The deadline of `id` has come (on the multiplexer thread).
  void expire(uint64_t id);

private:
  // The connections in their handshake. Raw pointers: a connection leaves
  // the map in its destructor, and the multiplexer thread, the only one
  // that destroys connections while the loop runs, is the one that reads
  // the map (the mutex covers the destruction of the last ones after the
  // loop stopped).
  std::mutex mtx;
  std::map<uint64_t, guarded_scribe*> pending;
  uint64_t next_id = 0;
};

/// "1.2.3.4:5678" of the peer of `fd`.
std::string peer_of(net::native_socket fd) {
  auto addr = net::remote_addr_of_fd(fd);
  auto port = net::remote_port_of_fd(fd);
  return node_address{addr ? *addr : std::string{"an unknown peer"},
                      port ? *port : uint16_t{0}}
    .to_string();
}

uint32_t read_u32_be(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8)
         | uint32_t{p[3]};
}

uint64_t read_u64_be(const unsigned char* p) {
  return (uint64_t{read_u32_be(p)} << 32) | read_u32_be(p + 4);
}

/// A connection through the door: the scribe of CAF (what the BASP broker
/// reads and writes a connection through), which looks at every chunk
/// before the broker does. The stream itself is the subclass's.
class guarded_scribe : public caf::io::scribe {
public:
  guarded_scribe(net::native_socket fd, std::shared_ptr<door_state> door,
                 std::string identity)
    : caf::io::scribe(net::conn_hdl_from_socket(fd)),
      door_(std::move(door)),
      identity_(std::move(identity)),
      fd_(fd) {
  }

  ~guarded_scribe() override {
    if (id_ != 0)
      door_->forget(id_);
    unbind();
  }

  void set_id(uint64_t id) {
    id_ = id;
  }

  void set_tls(SSL* ssl) {
    tls_ = ssl;
  }

  void configure_read(caf::io::receive_policy::config config) final {
    // The broker asks for exactly `payload_len` bytes once it read a header,
    // and the stream sizes its buffer to that before it reads a byte.
    // `consume` refuses such a header before the broker sees it; this is
    // the guard should a header ever pass it unseen.
    if (config.second > door_->cfg.max_frame_bytes) {
      oversized_ = config.second;
      return;
    }
    configure_stream(config);
  }

  bool consume(caf::execution_unit* ctx, const void* buf, size_t n) final {
    if (detached())
      return false;
    bool frame_done = false;
    if (await_header_ && n == caf::io::basp::header_size) {
      auto bytes = static_cast<const unsigned char*>(buf);
      // The header as CAF writes it: operation, two padding bytes, flags,
      // then payload_len in network byte order.
      auto len = read_u32_be(bytes + 4);
      if (len > door_->cfg.max_frame_bytes) {
        refuse(ctx, len);
        return false;
      }
      op_ = bytes[0];
      in_handshake_frame_ = op_ == op(message_type::client_handshake);
      // A direct message to an actor of another client (by number).
      if (op_ == op(message_type::direct_message)
          && (bytes[3] & caf::io::basp::header::named_receiver_flag) == 0
          && !may_address(door_->home, read_u64_be(bytes + 24), identity_)) {
        refuse_node_id(ctx, "a message to a session of another client");
        return false;
      }
      await_header_ = len == 0;
      frame_done = len == 0;
    } else if (!await_header_) {
      await_header_ = true;
      frame_done = true;
      if (!check_payload(ctx, buf, n))
        return false;
    }
    // The client's handshake is the first frame it sends: once it is in,
    // the broker's heartbeat watches the connection.
    if (frame_done && in_handshake_frame_ && id_ != 0) {
      door_->forget(id_);
      id_ = 0;
    }
    auto ok = caf::io::scribe::consume(ctx, buf, n);
    if (oversized_ != 0 && !detached()) {
      refuse(ctx, oversized_);
      return false;
    }
    if (ok && frame_done && in_handshake_frame_ && !detached()
        && !carries_bound_node()) {
      refuse_node_id(ctx, "the broker did not take its handshake");
      return false;
    }
    return ok;
  }

  /// Drops the connection if it has not finished its handshake by now.
  void expire(caf::execution_unit* ctx) {
    if (id_ == 0 || detached())
      return;
    ++late_handshakes;
    log::logger()->warn("dropped the connection of {}: no handshake within "
                        "{} ms (handshake_timeout)",
                        peer_of(fd_), door_->cfg.handshake_timeout.count());
    drop(ctx);
  }

protected:
  virtual void configure_stream(caf::io::receive_policy::config config) = 0;

  /// With TLS: the connection's TLS object, whose peer certificate names
  /// the client once the TLS handshake is done.
  SSL* tls_ = nullptr;

  void detach_from(caf::io::abstract_broker* ptr) override {
    if (id_ != 0) {
      door_->forget(id_);
      id_ = 0;
    }
    unbind();
    caf::io::scribe::detach_from(ptr);
  }

  std::shared_ptr<door_state> door_;

private:
  using message_type = caf::io::basp::message_type;

  static constexpr uint8_t op(message_type t) {
    return static_cast<uint8_t>(t);
  }

  /// Reads the node id at the start of `buf` (a BASP payload).
  static bool read_node_id(caf::execution_unit* ctx, const void* buf, size_t n,
                           caf::node_id& out) {
    caf::binary_deserializer bd{ctx, static_cast<const char*>(buf), n};
    return !bd(out) && out != caf::node_id{};
  }

  /// The payload of the frame whose header came last. The client's
  /// handshake names the node id the broker will name the senders of its
  /// messages by: the door notes it with this connection's identity
  /// (refusing one that a connection of another identity carries). The
  /// frames whose payload names their source node themselves (routed,
  /// monitor and down messages) must name this connection's: otherwise a
  /// peer could speak, or report actors down, for another client.
  bool check_payload(caf::execution_unit* ctx, const void* buf, size_t n) {
    if (op_ == op(message_type::client_handshake)) {
      caf::node_id claimed;
      if (!read_node_id(ctx, buf, n, claimed)) {
        refuse_node_id(ctx, "its handshake names no node id");
        return false;
      }
      if (bound_)
        // A repeated handshake: CAF ignores it, unless it names another
        // node.
        return claimed == peer_node_ || refuse_node_id(ctx, "a second node id");
      if (tls_ != nullptr)
        identity_ = certificate_subject(tls_);
      if (!bind_peer(claimed, identity_)) {
        refuse_node_id(ctx, "its node id is connected as another client");
        return false;
      }
      peer_node_ = claimed;
      bound_ = true;
      return true;
    }
    if (op_ == op(message_type::routed_message)
        || op_ == op(message_type::monitor_message)
        || op_ == op(message_type::down_message)) {
      caf::node_id source;
      if (!bound_ || !read_node_id(ctx, buf, n, source)
          || source != peer_node_) {
        refuse_node_id(ctx, "a message that names another source node");
        return false;
      }
    }
    return true;
  }

  /// Whether the BASP broker took this connection for the node id the door
  /// noted (it ignores the handshake of a node it is connected to).
  bool carries_bound_node() {
    if (!bound_)
      return false;
    auto broker = dynamic_cast<caf::io::basp_broker*>(parent());
    return broker == nullptr
           || broker->instance.tbl().lookup_direct(hdl()) == peer_node_;
  }

  void unbind() {
    if (bound_) {
      bound_ = false;
      unbind_peer(peer_node_);
    }
  }

  bool refuse_node_id(caf::execution_unit* ctx, std::string_view why) {
    ++false_node_ids;
    log::logger()->warn("dropped the connection of {} ({}): {}", peer_of(fd_),
                        identity_.empty() ? "?" : identity_, why);
    unbind();
    drop(ctx);
    return false;
  }

  void refuse(caf::execution_unit* ctx, uint64_t len) {
    ++oversized_frames;
    log::logger()->warn("dropped the connection of {}: it announced a frame "
                        "of {} bytes, more than the {} a node reads "
                        "(max_frame_bytes)",
                        peer_of(fd_), len, door_->cfg.max_frame_bytes);
    drop(ctx);
  }

  // Ends the connection for the peer at once, takes it off the loop and
  // tells the broker it closed. The descriptor closes with the stream,
  // once the loop let go of it: a write that waits (a TLS handshake in
  // progress) fails on the shut socket and lets go.
  void drop(caf::execution_unit* ctx) {
    ::shutdown(fd_, SHUT_RDWR);
    if (auto p = parent())
      p->context(ctx);
    io_failure(ctx, net::operation::read);
  }

  /// Who the peer is (see `publish_node`); empty until known.
  std::string identity_;
  /// The node id its handshake named, once noted (`bound_`).
  caf::node_id peer_node_;
  bool bound_ = false;
  /// The operation of the frame whose header came last.
  uint8_t op_ = 0;
  net::native_socket fd_;
  uint64_t id_ = 0;
  // Whether the next chunk is a header (else the payload of the last one).
  bool await_header_ = true;
  bool in_handshake_frame_ = false;
  size_t oversized_ = 0;
};

void door_state::watch(guarded_scribe* s) {
  if (cfg.handshake_timeout.count() <= 0)
    return;
  uint64_t id;
  {
    std::lock_guard<std::mutex> guard{mtx};
    id = ++next_id;
    pending.emplace(id, s);
  }
  s->set_id(id);
  caf::delayed_anon_send(warden, cfg.handshake_timeout, id);
}

void door_state::expire(uint64_t id) {
  caf::intrusive_ptr<guarded_scribe> s;
  {
    std::lock_guard<std::mutex> guard{mtx};
    auto i = pending.find(id);
    if (i == pending.end())
      return;
    s.reset(i->second);
    pending.erase(i);
  }
  s->expire(&mpx);
}

/// The warden of a door: holds it weakly, so that the door (and with it
/// the warden) goes once the listening socket and its connections are gone.
caf::behavior door_warden(caf::event_based_actor*,
                          std::weak_ptr<door_state> weak) {
  return {
    // The deadline of connection `id` has come.
    [weak](uint64_t id) {
      if (auto door = weak.lock())
        door->mpx.dispatch([door, id] { door->expire(id); });
    },
  };
}

/// Reads and writes through caf::openssl's session (as caf::openssl's own
/// scribe does).
struct tls_policy {
  explicit tls_policy(caf::openssl::session_ptr s) : session(std::move(s)) {
  }

  net::rw_state read_some(size_t& result, net::native_socket fd, void* buf,
                          size_t len) {
    return session->read_some(result, fd, buf, len);
  }

  net::rw_state write_some(size_t& result, net::native_socket fd,
                           const void* buf, size_t len) {
    return session->write_some(result, fd, buf, len);
  }

  bool must_read_more(net::native_socket fd, size_t threshold) {
    return session->must_read_more(fd, threshold);
  }

  caf::openssl::session_ptr session;
};

/// A guarded connection over `Policy` (caf::policy::tcp or `tls_policy`).
template <class Policy>
class door_scribe final : public guarded_scribe {
public:
  template <class... Ts>
  door_scribe(net::default_multiplexer& mpx, net::native_socket fd,
              std::shared_ptr<door_state> door, std::string identity,
              Ts&&... xs)
    : guarded_scribe(fd, std::move(door), std::move(identity)),
      stream_(mpx, fd, std::forward<Ts>(xs)...) {
  }

  void ack_writes(bool enable) override {
    stream_.ack_writes(enable);
  }

  std::vector<char>& wr_buf() override {
    return stream_.wr_buf();
  }

  std::vector<char>& rd_buf() override {
    return stream_.rd_buf();
  }

  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }

  void flush() override {
    stream_.flush(this);
  }

  std::string addr() const override {
    auto x = net::remote_addr_of_fd(stream_.fd());
    return x ? *x : std::string{};
  }

  uint16_t port() const override {
    auto x = net::remote_port_of_fd(stream_.fd());
    return x ? *x : uint16_t{0};
  }

  void add_to_loop() override {
    stream_.activate(this);
  }

  void remove_from_loop() override {
    stream_.passivate();
  }

protected:
  void configure_stream(caf::io::receive_policy::config config) override {
    stream_.configure_read(config);
    if (launched_)
      return;
    launched_ = true;
    stream_.start(this);
    // TLS: makes the loop call the session once, so that SSL_accept runs
    // before the peer sent anything (as caf::openssl's scribe does).
    if constexpr (std::is_same_v<Policy, tls_policy>)
      stream_.force_empty_write(this);
  }

private:
  bool launched_ = false;
  net::stream_impl<Policy> stream_;
};

/// The listening socket of a node: CAF's doorman, whose connections are
/// guarded ones.
class door_doorman final : public net::doorman_impl {
public:
  door_doorman(net::default_multiplexer& mpx, net::native_socket fd,
               std::shared_ptr<door_state> door, bool tls)
    : net::doorman_impl(mpx, fd), door_(std::move(door)), tls_(tls) {
  }

  bool new_connection() override {
    if (detached())
      return false;
    auto& mpx = acceptor_.backend();
    auto fd = acceptor_.accepted_socket();
    std::string identity;
    if (!tls_ && !admit(fd, identity)) {
      net::close_socket(fd);
      return true;
    }
    net::nonblocking(fd, true);
    net::keepalive(fd, true);
    caf::intrusive_ptr<guarded_scribe> s;
    if (tls_) {
      auto session = caf::openssl::make_session(parent()->system(), fd, true);
      if (!session) {
        // This connection only: the door stays open.
        log::logger()->warn("dropped the connection of {}: no TLS session "
                            "for it",
                            peer_of(fd));
        net::close_socket(fd);
        return true;
      }
      auto* ssl = ssl_of(*session);
      s = caf::make_counted<door_scribe<tls_policy>>(
        mpx, fd, door_, std::string{}, std::move(session));
      s->set_tls(ssl);
    } else {
      s = caf::make_counted<door_scribe<caf::policy::tcp>>(mpx, fd, door_,
                                                           std::move(identity));
    }
    door_->watch(s.get());
    auto hdl = s->hdl();
    parent()->add_scribe(std::move(s));
    return doorman::new_connection(&mpx, hdl);
  }

private:
  /// Without TLS: whether the peer of `fd` may come in, and who it is. On
  /// loopback the kernel names the uid that owns the peer's socket: the
  /// node's own uid and the allowed ones come in, any other is refused
  /// before a byte is read or written (also when the kernel cannot say).
  bool admit(net::native_socket fd, std::string& identity) {
    if (!peer_is_loopback(fd)) {
      auto addr = net::remote_addr_of_fd(fd);
      identity = "address:" + (addr ? *addr : std::string{"?"});
      return true;
    }
    auto uid = loopback_peer_uid(fd);
    if (!uid) {
      ++foreign_uids;
      log::logger()->warn("refused the connection of {}: its uid is "
                          "unknown ({})",
                          peer_of(fd), uid.error().message);
      return false;
    }
    auto& allowed = door_->cfg.allowed_uids;
    if (*uid != door_->own_uid
        && std::find(allowed.begin(), allowed.end(), *uid) == allowed.end()) {
      ++foreign_uids;
      log::logger()->warn("refused the connection of {}: uid {} is neither "
                          "the node's user ({}) nor an allowed uid "
                          "(allowed_uids, serve --allow-uid)",
                          peer_of(fd), *uid, door_->own_uid);
      return false;
    }
    identity = "uid:" + std::to_string(*uid);
    return true;
  }

  std::shared_ptr<door_state> door_;
  bool tls_;
};

} // namespace

caf::expected<uint16_t>
publish_through_door(caf::actor_system& sys, const node_actor& node,
                     const std::string& bind, uint16_t port, bool tls,
                     const door_config& door) {
  if (tls && !sys.has_openssl_manager())
    return caf::make_error(caf::sec::runtime_error,
                           "TLS without caf::openssl::manager");
  auto& mpx = static_cast<net::default_multiplexer&>(sys.middleman().backend());
  auto fd = net::new_tcp_acceptor_impl(
    port, bind.empty() ? nullptr : bind.c_str(), true);
  if (!fd)
    return std::move(fd.error());
  auto state = std::make_shared<door_state>(door, mpx, sys.node());
  state->warden = sys.spawn<caf::hidden>(door_warden,
                                         std::weak_ptr<door_state>{state});
  auto doorman = caf::make_counted<door_doorman>(mpx, *fd, state, tls);
  auto actual = doorman->port();
  // What caf::io's middleman actor does to publish (middleman_actor_impl::
  // put): the broker adds the doorman and the published actor.
  auto basp
    = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  caf::anon_send(basp, caf::publish_atom_v,
                 caf::io::doorman_ptr{std::move(doorman)}, actual,
                 caf::actor_cast<caf::strong_actor_ptr>(node),
                 sys.message_types(node));
  return actual;
}

door_counts door_counters() {
  return {oversized_frames.load(), late_handshakes.load(), foreign_uids.load(),
          false_node_ids.load()};
}

} // namespace sandbox::actors::detail
