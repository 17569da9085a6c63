#include "remote/peer_identity.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include <caf/actor_control_block.hpp>
#include <caf/local_actor.hpp>

namespace sandbox::actors::detail {

namespace {

struct binding {
  std::string identity;
  /// Live connections that carry the node id.
  size_t connections = 0;
};

// Written on the multiplexer thread (the doors), read by the node actor.
std::mutex mtx;
std::map<caf::node_id, binding> bindings;
std::map<std::pair<caf::node_id, caf::actor_id>, std::vector<std::string>>
  owned;

} // namespace

bool bind_peer(const caf::node_id& id, const std::string& identity) {
  std::lock_guard<std::mutex> guard{mtx};
  auto& b = bindings[id];
  if (b.connections > 0 && b.identity != identity)
    return false;
  b.identity = identity;
  ++b.connections;
  return true;
}

void unbind_peer(const caf::node_id& id) {
  std::lock_guard<std::mutex> guard{mtx};
  auto i = bindings.find(id);
  if (i == bindings.end())
    return;
  if (--i->second.connections == 0)
    bindings.erase(i);
}

std::optional<std::string> peer_identity(const caf::node_id& id) {
  std::lock_guard<std::mutex> guard{mtx};
  auto i = bindings.find(id);
  if (i == bindings.end())
    return std::nullopt;
  return i->second.identity;
}

std::string caller_identity(caf::local_actor* self) {
  auto& src = self->current_sender();
  if (!src)
    return {};
  if (src->node() == self->node())
    return local_identity;
  return peer_identity(src->node()).value_or(std::string{});
}

bool is_admin(const std::vector<std::string>& admins, const std::string& who) {
  return who == local_identity
         || std::find(admins.begin(), admins.end(), who) != admins.end();
}

void note_owned_actor(const caf::node_id& home, caf::actor_id id,
                      std::vector<std::string> who) {
  std::lock_guard<std::mutex> guard{mtx};
  owned[{home, id}] = std::move(who);
}

void forget_owned_actor(const caf::node_id& home, caf::actor_id id) {
  std::lock_guard<std::mutex> guard{mtx};
  owned.erase({home, id});
}

bool may_address(const caf::node_id& home, caf::actor_id id,
                 const std::string& who) {
  std::lock_guard<std::mutex> guard{mtx};
  auto i = owned.find({home, id});
  return i == owned.end()
         || std::find(i->second.begin(), i->second.end(), who)
              != i->second.end();
}

} // namespace sandbox::actors::detail
