#include "remote/peer_identity.hpp"

#include <map>
#include <mutex>
#include <utility>

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

} // namespace sandbox::actors::detail
