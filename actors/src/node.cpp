#include "sandbox/actors/node.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <fmt/format.h>

#include "caf_error.hpp"
#include "events.hpp"
#include "remote/peer_identity.hpp"
#include "sandbox/contain/session_net.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/log.hpp"
#include "sandbox/net/port_lease.hpp"
#include "session/session.hpp"
#include "weak_send.hpp"

namespace sandbox::actors {

namespace {

/// A session the node knows about.
struct node_entry {
  session_actor handle;
  session_info info;
  /// The client identity that created it (see `node_config::admins`).
  std::string owner;
};

/// A creation waiting for its `on_first_create` hook.
struct pending_create {
  session_actor handle;
  session_info info;
  caf::typed_response_promise<session_actor, session_info> promise;
  std::string owner;
};

using create_promise = caf::typed_response_promise<session_actor, session_info>;
using allow_result = result<std::vector<net_destination>>;

/// A create whose allow list is being looked up on the runtime's file pool.
struct pending_lookup {
  session_config cfg;
  create_promise promise;
  std::string owner;
  /// Written by the pool's thread before it sends `resolved_atom`.
  std::shared_ptr<std::optional<allow_result>> allow;
};

/// A client that created sessions which end with it (not detached).
struct client_entry {
  caf::actor_addr owner;
  /// Where it connects from, for the log.
  std::string origin;
  std::set<std::string> sessions;
};

/// State of the node actor; owned by the actor alone.
struct node_state {
  static inline const char* name = "sandbox.node";
  runtime_ptr rt;
  node_config cfg;
  std::unique_ptr<port_lease_registry> ports;
  std::map<std::string, node_entry> sessions;
  std::map<std::string, pending_create> pending;
  std::map<uint64_t, pending_lookup> lookups;
  uint64_t next_lookup = 0;
  /// Clients by number, and the numbers of their owner actors.
  std::map<uint64_t, client_entry> clients;
  std::map<caf::actor_addr, uint64_t> client_numbers;
  uint64_t next_client = 0;
};

using self_ptr = node_actor_impl::stateful_pointer<node_state>;

/// The client identity of the sender (see `node_config::admins`); call it
/// before `make_response_promise`, which takes the sender out of the
/// message.
std::string caller(self_ptr self) {
  return detail::caller_identity(self);
}

bool is_admin(const node_state& st, const std::string& who) {
  return detail::is_admin(st.cfg.admins, who);
}

/// Whether `who` may see, use and stop the session `entry`: its creator
/// and the admins.
bool may_use(const node_state& st, const std::string& who,
             const node_entry& entry) {
  return (!who.empty() && who == entry.owner) || is_admin(st, who);
}

/// Tells the doors who may address the session `handle` by its number:
/// `owner` and the admins (see peer_identity.hpp).
void guard_session(const node_state& st, const session_actor& handle,
                   const std::string& owner) {
  auto who = st.cfg.admins;
  if (!owner.empty())
    who.push_back(owner);
  detail::note_owned_actor(handle.node(), handle.id(), std::move(who));
}

/// Whether the current message comes from this process (the node's own
/// messages to itself and its sessions').
bool from_here(self_ptr self) {
  auto& src = self->current_sender();
  return src && src->node() == self->node();
}

/// The session logs its receipt; the node says why it stops it.
void log_stop(const std::string& id, std::string_view why) {
  log::logger()->info("{} stopping ({})", log::tag{id}, why);
}

/// Ties the new session `id` to the client whose owner actor `cfg` names
/// (when it has one and the session is not detached): the session stops
/// once that client is gone for longer than the grace period.
void watch_owner(self_ptr self, const std::string& id,
                 const session_config& cfg) {
  if (!cfg.owner || cfg.detached)
    return;
  auto& st = self->state;
  auto addr = cfg.owner.address();
  auto i = st.client_numbers.find(addr);
  if (i == st.client_numbers.end()) {
    auto n = ++st.next_client;
    i = st.client_numbers.emplace(addr, n).first;
    client_entry entry;
    entry.owner = addr;
    entry.origin = caf::to_string(cfg.owner.node());
    log::logger()->debug("client {} connected (node {})", n, entry.origin);
    st.clients.emplace(n, std::move(entry));
    self->monitor(cfg.owner);
  }
  st.clients[i->second].sessions.insert(id);
}

/// The owner actor of a client went down: its connection dropped or it
/// ended. Its sessions stop after the grace period.
bool on_owner_down(self_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  auto i = st.client_numbers.find(msg.source);
  if (i == st.client_numbers.end())
    return false;
  auto n = i->second;
  st.client_numbers.erase(i);
  auto& entry = st.clients[n];
  // Sessions it stopped itself are gone already.
  for (auto i = entry.sessions.begin(); i != entry.sessions.end();)
    i = st.sessions.count(*i) == 0 ? entry.sessions.erase(i) : std::next(i);
  log::logger()->debug("client {} disconnected ({}); its {} session(s) stop "
                       "in {} ms",
                       n, caf::to_string(msg.reason), entry.sessions.size(),
                       st.cfg.client_grace.count());
  self->delayed_send(caf::actor_cast<node_actor_impl>(self),
                     st.cfg.client_grace, grace_atom_v, n);
  return true;
}

/// Stops what is left of the sessions of the gone client `n`.
void on_grace_over(self_ptr self, uint64_t n) {
  auto& st = self->state;
  auto i = st.clients.find(n);
  if (i == st.clients.end())
    return;
  auto ids = std::move(i->second.sessions);
  st.clients.erase(i);
  for (auto& id : ids) {
    auto j = st.sessions.find(id);
    if (j == st.sessions.end())
      continue;
    auto handle = j->second.handle;
    st.sessions.erase(j);
    log_stop(id, "its client is gone");
    self->request(handle, caf::infinite, stop_atom_v)
      .then([](const stop_receipt&) {},
            [id](caf::error& err) {
              log::logger()->warn("{} stop failed: {}", log::tag{id},
                                  caf::to_string(err));
            });
  }
}

caf::error not_found(const std::string& id) {
  return caf::make_error(errc::session_not_found,
                         fmt::format("no such session: {}", id));
}

/// Runs `live` when the session `id` (`handle`) is not stopped, else
/// forgets it and runs `gone`. A session stopped through its own handle
/// tells the node (`ended`), but its stop may still be completing.
template <class Live, class Gone>
void when_live(self_ptr self, const std::string& id, session_actor handle,
               Live live, Gone gone) {
  self->request(handle, caf::infinite, info_atom_v)
    .then(
      [self, id, live, gone](const session_info& info) mutable {
        if (!info.stopped) {
          live();
          return;
        }
        self->state.sessions.erase(id);
        gone();
      },
      [self, id, gone](caf::error&) mutable {
        self->state.sessions.erase(id);
        gone();
      });
}

/// Runs the hook off the node's thread and reports back with `hooked`.
void run_hook(self_ptr self, const std::string& id, session_actor s) {
  auto hook = self->state.cfg.on_first_create;
  auto node = caf::actor_cast<node_actor_impl>(self);
  self->system().spawn<caf::detached>(
    [hook, node, id, s](caf::event_based_actor* worker) {
      caf::error err;
      try {
        err = hook(worker->system(), restricted(s));
      } catch (const std::exception& e) {
        err = caf::make_error(
          errc::aborted, fmt::format("on_first_create failed: {}", e.what()));
      }
      worker->send(node, hooked_atom_v, id, std::move(err));
      worker->quit();
    });
}

/// Leases the session's port. A contained session's port is listened on
/// now, on the host's 127.0.0.1 (the session forwards it inside), and is
/// none of its allowed loopback destinations (that would forward it back
/// to itself): a port that fails either is held and another one leased.
result<port_lease> lease_for(node_state& st, session_params& params) {
  if (params.isolation != isolation_mode::contained)
    return st.ports->acquire();
  std::vector<port_lease> skipped;
  for (;;) {
    auto lease = st.ports->acquire();
    if (!lease)
      return lease;
    auto port = lease->port();
    bool allowed = false;
    for (auto& d : params.allow_net)
      allowed = allowed || (d.loopback() && d.port == port);
    if (!allowed) {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(port);
      auto fd = listen_tcp(reinterpret_cast<sockaddr*>(&addr), sizeof(addr),
                           fmt::format("127.0.0.1:{}", port));
      if (fd) {
        params.host_listener = std::make_shared<unique_fd>(std::move(*fd));
        return lease;
      }
      if (fd.error().code != errc::port_unavailable)
        return fd.error();
    }
    skipped.push_back(std::move(*lease));
  }
}

/// The behavior of a node whose configuration is unusable: it stays up and
/// answers every request with the reason, so that no caller sees a dead
/// node (`request_receiver_down`) instead of what is wrong.
node_actor_impl::behavior_type refusing(caf::error err) {
  return {
    [err](create_atom, session_config&)
      -> caf::result<session_actor, session_info> { return err; },
    [](hooked_atom, const std::string&, caf::error&) {},
    [](resolved_atom, uint64_t) {},
    [err](get_atom, const std::string&) -> caf::result<session_actor> {
      return err;
    },
    [err](resume_atom, const std::string&) -> caf::result<session_actor> {
      return err;
    },
    [err](list_atom) -> caf::result<std::vector<session_info>> { return err; },
    [err](stop_atom, const std::string&) -> caf::result<stop_receipt> {
      return err;
    },
    [err](stop_atom) -> caf::result<uint32_t> { return err; },
    [](grace_atom, uint64_t) {},
    [](ended_atom, const std::string&) {},
  };
}

} // namespace

result<void> validate(const node_config& cfg) {
  if (auto ok = validate_port_range(cfg.first_port, cfg.last_port); !ok)
    return error{errc::invalid_argument,
                 fmt::format("node_config: {}", ok.error().message)};
  if (!cfg.base_directory.empty())
    if (auto ok = fs::validate_path(cfg.base_directory); !ok)
      return error{errc::invalid_argument,
                   fmt::format("invalid node_config.base_directory: {}",
                               ok.error().message)};
  if (cfg.client_grace.count() < 0)
    return error{errc::invalid_argument,
                 fmt::format("invalid node_config.client_grace {} ms: must "
                             "not be negative",
                             cfg.client_grace.count())};
  if (cfg.scheduler.threads > max_scheduler_threads)
    return error{errc::invalid_argument,
                 fmt::format("invalid node_config.scheduler.threads {}: must "
                             "be 0 (one per core) to {}",
                             cfg.scheduler.threads, max_scheduler_threads)};
  return {};
}

/// Creates the session `cfg` asks for, its allow list looked up already
/// (`allow`) or not (null), and answers through `rp`.
void create_session(self_ptr self, const session_config& cfg,
                    const allow_result* allow, create_promise rp,
                    std::string owner) {
  auto& st = self->state;
  auto params = make_session_params(st.rt, cfg, st.cfg.base_directory, allow);
  if (!params) {
    rp.deliver(to_caf(params.error()));
    return;
  }
  auto lease = lease_for(st, *params);
  if (!lease) {
    rp.deliver(to_caf(lease.error()));
    return;
  }
  session_info info;
  info.id = params->id;
  info.working_directory = params->working_directory;
  info.home_directory = params->home_directory;
  info.port = lease->port();
  info.isolation = params->isolation;
  params->lease = std::make_shared<port_lease>(std::move(*lease));
  params->node = self->address();
  auto handle = spawn_session(self->system(), std::move(*params));
  self->monitor(handle);
  guard_session(st, handle, owner);
  log::logger()->info("{} created in {} for {}{}", log::tag{info.id},
                      info.working_directory, owner.empty() ? "nobody" : owner,
                      cfg.detached ? " (detached)" : "");
  log::logger()->debug("{} leased port {}", log::tag{info.id}, info.port);
  watch_owner(self, info.id, cfg);
  if (!st.cfg.on_first_create) {
    st.sessions.emplace(info.id, node_entry{handle, info, std::move(owner)});
    rp.deliver(handle, info);
    return;
  }
  st.pending.emplace(info.id,
                     pending_create{handle, info, rp, std::move(owner)});
  run_hook(self, info.id, handle);
}

node_actor_impl::behavior_type node_behavior(self_ptr self, runtime_ptr rt,
                                             node_config cfg) {
  if (auto ok = validate(rt->config()); !ok)
    return refusing(to_caf(ok.error()));
  if (auto ok = validate(cfg); !ok)
    return refusing(to_caf(ok.error()));
  auto& st = self->state;
  st.rt = std::move(rt);
  st.cfg = std::move(cfg);
  st.ports = std::make_unique<port_lease_registry>(st.cfg.first_port,
                                                   st.cfg.last_port);
  self->set_down_handler([self](caf::down_msg& msg) {
    if (on_owner_down(self, msg))
      return;
    // Sessions are monitored from their start: this one is gone.
    if (msg.source && msg.source.node() == self->node())
      detail::forget_owned_actor(msg.source.node(), msg.source.id());
    auto& sessions = self->state.sessions;
    for (auto i = sessions.begin(); i != sessions.end(); ++i)
      if (i->second.handle.address() == msg.source) {
        sessions.erase(i);
        return;
      }
  });
  return {
    [self](create_atom,
           session_config& cfg) -> caf::result<session_actor, session_info> {
      auto& st = self->state;
      // Before the promise, which takes the sender out of the message.
      auto owner = caller(self);
      auto rp = self->make_response_promise<session_actor, session_info>();
      auto entries = allowlist_to_resolve(*st.rt, cfg);
      if (entries.empty()) {
        create_session(self, cfg, nullptr, rp, std::move(owner));
        return rp;
      }
      // A name lookup may take seconds: it runs on the runtime's file
      // pool, and the node answers everyone else meanwhile.
      auto n = st.next_lookup++;
      auto allow = std::make_shared<std::optional<allow_result>>();
      st.lookups.emplace(n, pending_lookup{std::move(cfg), rp, std::move(owner),
                                           allow});
      boost::asio::post(st.rt->file_pool(), [target = weak_self(self, *st.rt),
                                             n, allow,
                                             entries = std::move(entries)] {
        allow->emplace(resolve_allowlist(entries));
        send_if_alive<node_actor_impl>(target, resolved_atom_v, n);
      });
      return rp;
    },
    [self](resolved_atom, uint64_t n) {
      auto& st = self->state;
      auto i = st.lookups.find(n);
      // The pool's thread says so once the answer is there (a message from
      // anyone else before that is not its answer).
      if (i == st.lookups.end() || !i->second.allow->has_value())
        return;
      auto entry = std::move(i->second);
      st.lookups.erase(i);
      create_session(self, entry.cfg, &**entry.allow, entry.promise,
                     std::move(entry.owner));
    },
    [self](hooked_atom, const std::string& id, caf::error& err) {
      auto& st = self->state;
      auto i = st.pending.find(id);
      // Only the hook's worker, in this process, says so.
      if (i == st.pending.end() || !from_here(self))
        return;
      auto entry = std::move(i->second);
      st.pending.erase(i);
      if (!err) {
        st.sessions.emplace(id, node_entry{entry.handle, entry.info,
                                           std::move(entry.owner)});
        entry.promise.deliver(entry.handle, entry.info);
        return;
      }
      // §21: a failed hook leaves no session, no process and no lease; the
      // caller learns the hook's error once the stop is complete.
      self->request(entry.handle, caf::infinite, stop_atom_v)
        .then(
          [entry, err](const stop_receipt&) mutable {
            entry.promise.deliver(err);
          },
          [entry, err](caf::error&) mutable { entry.promise.deliver(err); });
    },
    [self](get_atom, const std::string& id) -> caf::result<session_actor> {
      auto& st = self->state;
      auto i = st.sessions.find(id);
      // Another client's session is as absent as one that never was.
      if (i == st.sessions.end() || !may_use(st, caller(self), i->second))
        return not_found(id);
      auto handle = i->second.handle;
      auto rp = self->make_response_promise<session_actor>();
      when_live(
        self, id, handle, [rp, handle]() mutable { rp.deliver(handle); },
        [rp, id]() mutable { rp.deliver(not_found(id)); });
      return rp;
    },
    [](resume_atom, const std::string& id) -> caf::result<session_actor> {
      return caf::make_error(errc::unsupported,
                             fmt::format("cannot resume session {}: a "
                                         "stopped session is gone for good",
                                         id));
    },
    [self](list_atom) -> caf::result<std::vector<session_info>> {
      auto& st = self->state;
      auto who = caller(self);
      auto rp = self->make_response_promise<std::vector<session_info>>();
      std::vector<const node_entry*> visible;
      for (auto& [id, entry] : st.sessions)
        if (may_use(st, who, entry))
          visible.push_back(&entry);
      if (visible.empty()) {
        rp.deliver(std::vector<session_info>{});
        return rp;
      }
      // Ask every session for its current child count; answer when all did.
      auto collected = std::make_shared<std::vector<session_info>>();
      auto remaining = std::make_shared<size_t>(visible.size());
      for (auto* visible_entry : visible) {
        auto& entry = *visible_entry;
        auto fallback = entry.info;
        self->request(entry.handle, caf::infinite, info_atom_v)
          .then(
            [self, rp, collected, remaining](session_info& info) mutable {
              // Stopped through its own handle: gone for the node too.
              if (info.stopped)
                self->state.sessions.erase(info.id);
              else
                collected->push_back(std::move(info));
              if (--*remaining == 0)
                rp.deliver(std::move(*collected));
            },
            [rp, collected, remaining, fallback](caf::error&) mutable {
              collected->push_back(fallback);
              if (--*remaining == 0)
                rp.deliver(std::move(*collected));
            });
      }
      return rp;
    },
    [self](stop_atom, const std::string& id) -> caf::result<stop_receipt> {
      auto& st = self->state;
      auto i = st.sessions.find(id);
      if (i == st.sessions.end() || !may_use(st, caller(self), i->second))
        return not_found(id);
      auto handle = i->second.handle;
      auto rp = self->make_response_promise<stop_receipt>();
      when_live(
        self, id, handle,
        [self, rp, id, handle]() mutable {
          self->state.sessions.erase(id);
          log_stop(id, "stop_session");
          self->request(handle, caf::infinite, stop_atom_v)
            .then([rp](const stop_receipt& r) mutable { rp.deliver(r); },
                  [rp](caf::error& err) mutable {
                    rp.deliver(std::move(err));
                  });
        },
        [rp, id]() mutable { rp.deliver(not_found(id)); });
      return rp;
    },
    [self](grace_atom, uint64_t n) {
      // The node's own timer only.
      if (self->current_sender() == self->ctrl())
        on_grace_over(self, n);
    },
    [self](ended_atom, const std::string& id) {
      // A stopped session is gone for the node: it leaves `list`, and
      // `stop_session(id)` answers `session_not_found`; dropping the handle
      // lets the session go away once nobody else holds it.
      auto& sessions = self->state.sessions;
      auto i = sessions.find(id);
      // Only the session itself says so.
      auto& from = self->current_sender();
      if (i != sessions.end() && from
          && i->second.handle.address() == from->address())
        sessions.erase(i);
    },
    [self](stop_atom) -> caf::result<uint32_t> {
      auto& st = self->state;
      // An admin stops every session, any other client its own.
      auto who = caller(self);
      auto rp = self->make_response_promise<uint32_t>();
      std::map<std::string, node_entry> stopping;
      if (is_admin(st, who))
        stopping.swap(st.sessions);
      for (auto i = st.sessions.begin(); i != st.sessions.end();)
        if (may_use(st, who, i->second)) {
          stopping.insert(*i);
          i = st.sessions.erase(i);
        } else {
          ++i;
        }
      auto count = static_cast<uint32_t>(stopping.size());
      if (count == 0) {
        rp.deliver(uint32_t{0});
        return rp;
      }
      auto remaining = std::make_shared<uint32_t>(count);
      for (auto& [id, entry] : stopping) {
        log_stop(id, "node shutdown");
        self->request(entry.handle, caf::infinite, stop_atom_v)
          .then(
            [rp, remaining, count](const stop_receipt&) mutable {
              if (--*remaining == 0)
                rp.deliver(count);
            },
            [rp, remaining, count](caf::error&) mutable {
              if (--*remaining == 0)
                rp.deliver(count);
            });
      }
      return rp;
    },
  };
}

node_actor spawn_node(caf::actor_system& sys, runtime_ptr rt, node_config cfg) {
  return sys.spawn(node_behavior, std::move(rt), std::move(cfg));
}

} // namespace sandbox::actors
