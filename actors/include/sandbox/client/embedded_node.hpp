#pragma once

#include <memory>

#include <caf/fwd.hpp>

#include "sandbox/actors/node.hpp"
#include "sandbox/actors/protocol.hpp"
#include "sandbox/actors/runtime_config.hpp"

namespace sandbox::actors {

/// An in-process node for plain C++ code: an actor system with sandbox's
/// types registered, the runtime (reactor, subreaper) its sessions share and
/// the node actor (the provider). Destruction stops every session.
class embedded_node : public basic_node {
public:
  explicit embedded_node(runtime_config cfg = {}, node_config ncfg = {});
  ~embedded_node() override;

  caf::actor_system& system() noexcept override;
  const runtime_ptr& rt() const noexcept {
    return rt_;
  }
  const node_actor& node() const noexcept override {
    return node_;
  }

private:
  struct impl;
  // Declared first, destroyed last: once the actor system is gone no actor
  // holds the runtime any more, so the reactor is joined here, on the
  // owner's thread, and never from one of its own threads.
  runtime_ptr rt_;
  std::unique_ptr<impl> impl_;
  node_actor node_;
};

} // namespace sandbox::actors
