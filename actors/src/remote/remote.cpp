#include "sandbox/actors/remote.hpp"
#include "remote/remote_detail.hpp"
#include "remote/remote_door.hpp"

#include <arpa/inet.h>

#include <atomic>
#include <map>
#include <mutex>

#include <caf/actor_control_block.hpp>
#include <caf/actor_registry.hpp>
#include <caf/attachable.hpp>
#include <caf/blocking_actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/remote_actor.hpp>
#include <caf/send.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sandbox/log.hpp"

#include "sandbox/validation.hpp"

namespace sandbox::actors {

// -- addresses ----------------------------------------------------------------

std::string node_address::to_string() const {
  if (host.find(':') != std::string::npos)
    return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

result<node_address> parse_node_address(std::string_view text,
                                        bool allow_port_zero) {
  auto bad = [&](std::string_view why) {
    return error{errc::invalid_argument,
                 fmt::format("invalid node address {}: {} (expected "
                             "HOST:PORT or [IPV6]:PORT)",
                             quote_for_message(std::string{text}), why)};
  };
  node_address out;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos)
      return bad("missing ]");
    out.host = std::string{text.substr(1, close - 1)};
    if (close + 1 >= text.size() || text[close + 1] != ':')
      return bad("missing :PORT after ]");
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return bad("missing :PORT");
    out.host = std::string{text.substr(0, colon)};
    if (out.host.find(':') != std::string::npos)
      return bad("an IPv6 address needs brackets");
    port = text.substr(colon + 1);
  }
  if (out.host.empty())
    return bad("empty host");
  if (out.host.find_first_of(" \t\n/") != std::string::npos)
    return bad("the host holds a space or a slash");
  if (port.empty() || port.size() > 5
      || port.find_first_not_of("0123456789") != std::string_view::npos)
    return bad("the port is not a number from 1 to 65535");
  auto value = std::stoul(std::string{port});
  if (value > 65535 || (value == 0 && !allow_port_zero))
    return bad("the port is not a number from 1 to 65535");
  out.port = static_cast<uint16_t>(value);
  return out;
}

bool is_loopback(std::string_view host) {
  if (host == "localhost")
    return true;
  std::string h{host};
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

// -- network layer ------------------------------------------------------------

result<void> validate(const door_config& cfg) {
  if (cfg.max_frame_bytes < min_frame_bytes)
    return error{errc::invalid_argument,
                 fmt::format("invalid door_config.max_frame_bytes {}: must "
                             "be at least {}",
                             cfg.max_frame_bytes, min_frame_bytes)};
  if (cfg.handshake_timeout.count() < 0)
    return error{errc::invalid_argument,
                 fmt::format("invalid door_config.handshake_timeout {} ms: "
                             "must not be negative",
                             cfg.handshake_timeout.count())};
  return {};
}

void configure_remote(caf::actor_system_config& cfg, const tls_config& tls) {
  configure_network(cfg, tls);
  // CAF's own heartbeat loop stays off: it starts with the actor system, and
  // CAF 0.17.6 records a connection it opens as last heard of at the clock's
  // epoch until the peer's first bytes arrive, so any tick of that loop
  // during a connect's handshake drops the connection
  // (`connection_timeout`): a node that takes longer than a heartbeat
  // interval to answer a handshake (many clients at once) could not be
  // reached at all. `start_liveness` starts the same loop once the first
  // connection is up or the node is published.
  cfg.set("middleman.heartbeat-interval", caf::timespan{0});
  cfg.set("middleman.connection-timeout", caf::timespan{remote_liveness});
  // Work sharing: idle workers sleep on a condition variable. CAF's default
  // (work stealing) polls for work between sleeps, which on a node and a
  // client that exchange a message per chunk cost about a third of the CPU
  // of a stream (scenario 10 of docs/benchmarks.md). An embedder may set
  // its own policy after this call.
  cfg.set("scheduler.policy", caf::atom("sharing"));
}

namespace {

/// How long a node lets a client's connection be silent before it drops
/// it: longer than a client waits on a silent node (`remote_liveness`). A
/// client process starved of CPU on a loaded machine sends its heartbeat
/// late; taking it for gone would fail its calls, while a client that is
/// really gone only has its sessions stopped a little later (after this
/// and the client grace period).
constexpr std::chrono::seconds node_side_liveness{3 * remote_liveness};

/// Starts the heartbeat loop of `sys` (once) with `timeout`.
void start_heartbeat(caf::actor_system& sys, std::chrono::seconds timeout) {
  static std::mutex mtx;
  static const auto key = caf::atom("sbx_live");
  std::lock_guard<std::mutex> guard{mtx};
  if (sys.registry().get(key))
    return;
  auto basp
    = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  // The BASP broker's tick: it sends a heartbeat on every connection, drops
  // the connections silent for longer than `timeout` and schedules the next
  // tick one interval later, for as long as the system runs.
  caf::anon_send(basp, caf::tick_atom_v, sys.clock().now(),
                 caf::timespan{remote_heartbeat}, caf::timespan{timeout});
  sys.registry().put(key, caf::actor_cast<caf::strong_actor_ptr>(basp));
}

} // namespace

void start_liveness(caf::actor_system& sys) {
  start_heartbeat(sys, remote_liveness);
}

namespace {

/// How often a connect that CAF dropped during its handshake for a tick of
/// the liveness loop is made (see `connect_node`).
constexpr int connect_attempts = 3;

std::mutex labels_mtx;
std::map<caf::node_id, std::string> labels;

/// The ports of published nodes; 0 marks a free slot. Atomics: accept()
/// reads them on any thread of the process.
constexpr size_t max_ports = 16;
std::atomic<uint16_t> published_ports[max_ports];

} // namespace

namespace detail {

bool note_published_port(uint16_t port) {
  for (auto& p : published_ports) {
    uint16_t expected = 0;
    if (p.load(std::memory_order_acquire) == port)
      return true;
    if (p.compare_exchange_strong(expected, port, std::memory_order_acq_rel))
      return true;
  }
  return false;
}

bool is_published_port(uint16_t port) {
  if (port == 0)
    return false;
  for (auto& p : published_ports)
    if (p.load(std::memory_order_acquire) == port)
      return true;
  return false;
}

} // namespace detail

std::string node_label(const caf::node_id& id) {
  {
    std::lock_guard<std::mutex> guard{labels_mtx};
    if (auto i = labels.find(id); i != labels.end())
      return i->second;
  }
  return caf::to_string(id);
}

caf::error unreachable_error(const caf::node_id& id) {
  return caf::make_error(errc::node_unreachable,
                         fmt::format("node {} is unreachable: the "
                                     "connection is gone",
                                     node_label(id)));
}

result<uint16_t> publish_node(caf::actor_system& sys, const node_actor& node,
                              const std::string& bind, uint16_t port, bool tls,
                              const door_config& door) {
  if (auto ok = validate(door); !ok)
    return ok.error();
  auto got = detail::publish_through_door(sys, node, bind, port, tls, door);
  if (!got)
    return error{errc::port_unavailable,
                 fmt::format("cannot listen on {}: {}",
                             node_address{bind, port}.to_string(),
                             sys.render(got.error()))};
  // In a program that links sandbox::publish, the node's connections get
  // fresh descriptor numbers (see publish_accept.hpp); without that a busy
  // node loses a client now and then, but it still works.
  if (!detail::note_published_port(*got))
    log::logger()->warn("port {}: accepted connections keep the kernel's "
                        "descriptor numbers (too many published ports)",
                        *got);
  start_heartbeat(sys, node_side_liveness);
  return *got;
}

result<node_actor> connect_node(caf::actor_system& sys,
                                const node_address& addr, bool tls) {
  auto attempt = [&] {
    return tls
             ? caf::openssl::remote_actor<node_actor>(sys, addr.host, addr.port)
             : sys.middleman().remote_actor<node_actor>(addr.host, addr.port);
  };
  auto got = attempt();
  // Once the liveness loop runs (an earlier connection of this system, or a
  // node it publishes), CAF 0.17.6 drops a connection whose handshake spans
  // one of its ticks as `connection_timeout` (see `configure_remote`).
  // Nothing went over that connection yet: it is made again, a bounded
  // number of times (a handshake slower than a heartbeat interval each
  // time is a node that does not answer).
  for (int i = 1; i < connect_attempts && !got
                  && got.error() == caf::sec::connection_timeout;
       ++i)
    got = attempt();
  if (!got) {
    auto& err = got.error();
    // A failed (TLS) handshake, explained; else what CAF says.
    auto why = describe_handshake_failure(addr.host, addr.port, tls, err);
    if (why.empty() && err == caf::sec::cannot_connect_to_node)
      why = "cannot connect (nothing listens there, or it refused)";
    else if (why.empty()
             && err == caf::sec::unexpected_actor_messaging_interface)
      why = "it is not a sandbox node of this version";
    else if (why.empty())
      why = sys.render(err);
    return error{errc::node_unreachable,
                 fmt::format("node {} is unreachable: {}", addr.to_string(),
                             why)};
  }
  start_liveness(sys);
  std::lock_guard<std::mutex> guard{labels_mtx};
  labels[got->node()] = addr.to_string();
  return std::move(*got);
}

// -- clients ------------------------------------------------------------------

caf::actor client_owner(caf::actor_system& sys) {
  static std::mutex mtx;
  static const auto key = caf::atom("sbx_owner");
  std::lock_guard<std::mutex> guard{mtx};
  if (auto found = sys.registry().get(key))
    return caf::actor_cast<caf::actor>(found);
  // Hidden: the actor system does not wait for it at shutdown. It never
  // quits and one reference to it is never released, on purpose: it must
  // not be destroyed while the system's registry is torn down (the
  // scheduler is gone by then). The node sees the connection drop instead.
  auto owner
    = sys.spawn<caf::hidden>([] { return caf::behavior{[](ok_atom) {}}; });
  sys.registry().put(key, caf::actor_cast<caf::strong_actor_ptr>(owner));
  new caf::actor(owner); // NOLINT: the one reference kept (see above)
  return owner;
}

namespace {

/// Answers an awaited request with `node_unreachable` once the (remote)
/// actor it is attached to goes down.
class down_answer : public caf::attachable {
public:
  down_answer(caf::strong_actor_ptr observer, caf::message_id response_id,
              caf::node_id node)
    : observer_(std::move(observer)),
      response_id_(response_id),
      node_(std::move(node)) {
  }

  void actor_exited(const caf::error&, caf::execution_unit* host) override {
    observer_->enqueue(nullptr, response_id_,
                       caf::make_message(unreachable_error(node_)), host);
  }

  bool matches(const token& what) override {
    return what.subtype == token::anonymous && what.ptr == this;
  }

private:
  caf::strong_actor_ptr observer_;
  caf::message_id response_id_;
  caf::node_id node_;
};

} // namespace

response_guard::response_guard(caf::blocking_actor* self,
                               const caf::strong_actor_ptr& dest,
                               caf::message_id response_id) {
  if (!dest || dest->node() == self->node())
    return;
  dest_ = dest;
  auto answer = std::make_unique<down_answer>(self->ctrl(), response_id,
                                              dest->node());
  token_ = answer.get();
  dest_->get()->attach(std::move(answer));
}

response_guard::~response_guard() {
  if (dest_)
    dest_->get()->detach(
      caf::attachable::token{caf::attachable::token::anonymous, token_});
}

} // namespace sandbox::actors
