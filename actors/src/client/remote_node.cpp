// remote_node and node_pool: the blocking facade of nodes in other
// processes (see remote.hpp).

#include <algorithm>
#include <optional>

#include <caf/scoped_actor.hpp>

#include <fmt/format.h>

#include "client/blocking_ask.hpp"
#include "client/host_thread.hpp"
#include "remote/remote_detail.hpp"
#include "sandbox/actors/remote.hpp"

namespace sandbox::actors {

client_system::client_system(const tls_config& tls) : tls_(tls.enabled()) {
  detail::caf_logger_scope keep;
  configure_remote(cfg_, tls);
  sys_ = std::make_unique<caf::actor_system>(cfg_);
}

client_system::~client_system() {
  // nop
}

remote_node::~remote_node() {
  // nop: sessions created here are the node's to stop once this client is
  // gone (client grace period), or the creator's.
}

result<std::unique_ptr<remote_node>>
remote_node::connect(const std::string& address, const tls_config& tls) {
  if (auto ok = validate(tls); !ok)
    return ok.error();
  auto addr = parse_node_address(address);
  if (!addr)
    return addr.error();
  return connect(std::make_shared<client_system>(tls), address);
}

result<std::unique_ptr<remote_node>>
remote_node::connect(client_system_ptr sys, const std::string& address) {
  auto addr = parse_node_address(address);
  if (!addr)
    return addr.error();
  auto node = connect_node(sys->system(), *addr, sys->tls());
  if (!node)
    return node.error();
  return std::make_unique<remote_node>(std::move(sys), std::move(*node),
                                       address);
}

// -- node_pool ----------------------------------------------------------------

result<node_pool> node_pool::connect(const std::vector<std::string>& addresses,
                                     const tls_config& tls) {
  if (addresses.empty())
    return error{errc::invalid_argument, "node_pool: no node address given"};
  if (auto ok = validate(tls); !ok)
    return ok.error();
  for (auto& a : addresses)
    if (auto addr = parse_node_address(a); !addr)
      return addr.error();
  node_pool pool;
  pool.sys_ = std::make_shared<client_system>(tls);
  for (auto& a : addresses) {
    auto node = remote_node::connect(pool.sys_, a);
    if (node)
      pool.nodes_.emplace_back(std::move(*node));
    else
      pool.unreachable_.push_back(node.error());
  }
  if (pool.nodes_.empty())
    return pool.unreachable_.front();
  return pool;
}

namespace {

/// Asks every node of `nodes` for its sessions at once and waits at most
/// `wait` for the answers; a node that did not answer has none.
std::vector<std::optional<std::vector<session_info>>>
list_all(caf::actor_system& sys,
         const std::vector<std::shared_ptr<remote_node>>& nodes,
         std::chrono::milliseconds wait) {
  std::vector<std::optional<std::vector<session_info>>> out(nodes.size());
  detail::caf_logger_scope keep;
  caf::scoped_actor self{sys};
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto rh = self->request(nodes[i]->node(), wait, list_atom_v);
    response_guard guard{
      self.ptr(), caf::actor_cast<caf::strong_actor_ptr>(nodes[i]->node()),
      rh.id()};
    rh.receive([&](std::vector<session_info>& xs) { out[i] = std::move(xs); },
               [](caf::error&) {});
  }
  return out;
}

} // namespace

result<std::shared_ptr<remote_node>>
node_pool::least_loaded(std::chrono::milliseconds wait) {
  // One node: nothing to compare. Its own answer to the request that
  // follows says whether it is there (no probe that a busy node could miss).
  if (nodes_.size() == 1)
    return nodes_.front();
  auto answers = list_all(sys_->system(), nodes_, wait);
  std::optional<size_t> best;
  uint64_t best_load = 0;
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i])
      continue;
    uint64_t load = 0;
    for (auto& info : *answers[i])
      load += info.children;
    if (!best || load < best_load) {
      best = i;
      best_load = load;
    }
  }
  if (!best)
    return error{errc::node_unreachable,
                 fmt::format("no node answers (tried {})", nodes_.size())};
  return nodes_[*best];
}

result<std::pair<blocking_session, std::shared_ptr<remote_node>>>
node_pool::create(session_config cfg) {
  auto node = least_loaded();
  if (!node)
    return node.error();
  auto s = blocking_session::create(**node, std::move(cfg));
  if (!s)
    return s.error();
  return std::make_pair(std::move(*s), std::move(*node));
}

result<std::pair<blocking_session, std::shared_ptr<remote_node>>>
node_pool::find(const std::string& id) {
  std::optional<sandbox::error> failure;
  for (auto& node : nodes_) {
    auto& sys = node->system();
    detail::caf_logger_scope keep;
    caf::scoped_actor self{sys};
    std::optional<session_actor> found;
    std::optional<sandbox::error> err;
    auto rh = self->request(node->node(), caf::infinite, get_atom_v, id);
    response_guard guard{self.ptr(),
                         caf::actor_cast<caf::strong_actor_ptr>(node->node()),
                         rh.id()};
    rh.receive([&](session_actor& h) { found = std::move(h); },
               [&](caf::error& e) { err = from_caf(e); });
    if (found)
      return std::make_pair(blocking_session{sys, std::move(*found)}, node);
    if (err && err->code != errc::session_not_found && !failure)
      failure = std::move(err);
  }
  if (failure)
    return *failure;
  return error{errc::session_not_found, fmt::format("no such session: {}", id)};
}

result<std::vector<pooled_session>> node_pool::list() {
  auto answers = list_all(sys_->system(), nodes_, std::chrono::seconds{5});
  std::vector<pooled_session> out;
  bool any = false;
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i])
      continue;
    any = true;
    for (auto& info : *answers[i])
      out.push_back({nodes_[i]->address(), std::move(info)});
  }
  if (!any)
    return error{errc::node_unreachable,
                 fmt::format("no node answers (tried {})", nodes_.size())};
  return out;
}

result<stop_receipt> node_pool::stop_session(const std::string& id) {
  std::optional<sandbox::error> failure;
  for (auto& node : nodes_) {
    auto r = node->stop_session(id);
    if (r)
      return r;
    if (r.error().code != errc::session_not_found && !failure)
      failure = r.error();
  }
  if (failure)
    return *failure;
  return error{errc::session_not_found, fmt::format("no such session: {}", id)};
}

} // namespace sandbox::actors
