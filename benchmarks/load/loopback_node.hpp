#pragma once

// A node published on a free loopback port, for the scenarios that reach a
// node over the network (10: remote nodes, 13: processes).

#include <memory>
#include <stdexcept>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "bench.hpp"
#include "sandbox/actors/publish_accept.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"

namespace sandbox::bench {

/// A node published on a free loopback port by an actor system of its own.
struct loopback_node {
  actors::system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  actors::node_actor node;
  uint16_t port = 0;

  loopback_node(const options& opt, const actors::tls_config& tls) {
    actors::configure_remote(cfg, tls);
    sys = std::make_unique<caf::actor_system>(cfg);
    auto rt = actors::make_runtime(node_config(opt));
    node = actors::spawn_node(*sys, rt, {});
    actors::renumber_node_connections();
    auto p = actors::publish_node(*sys, node, "127.0.0.1", 0, tls.enabled());
    if (!p)
      throw std::runtime_error(p.error().message);
    port = *p;
  }

  ~loopback_node() {
    caf::scoped_actor self{*sys};
    self->request(node, caf::infinite, actors::stop_atom_v)
      .receive([](uint32_t) {}, [](caf::error&) {});
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    node = nullptr;
    // Actors sent to a remote client stay registered while they live, and
    // stopped sessions live on: the system would wait for them forever. It
    // is left to the end of the process.
    (void) sys.release();
  }
};

} // namespace sandbox::bench
