#pragma once

#include <string>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "events.hpp"
#include "runtime.hpp"
#include "sandbox/actors/protocol.hpp"
#include "sandbox/contain/session_net.hpp"
#include "sandbox/net/port_lease.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox::actors {

/// What a session is made of once its directories are resolved.
struct session_params {
  runtime_ptr rt;
  std::string id;
  /// Absolute, existing.
  std::string working_directory;
  /// The node made `working_directory` for this session (`<base>/<id>`,
  /// no working directory asked for): the stop removes it when it is
  /// empty, so that ephemeral sessions leave nothing behind.
  bool own_working_directory = false;
  /// Absolute; becomes HOME (§4). Exists unless `private_home` is set.
  std::string home_directory;
  /// `home_directory` is the default home: the session makes it (private
  /// to the user, lstat-checked) at its first execution, so that a session
  /// used only for files needs no usable temp directory.
  bool private_home = false;
  /// `home_directory` is the session's own default home
  /// (`<user directory>/homes/<id>`, a contained session without a home
  /// asked for): the stop removes it with everything in it.
  bool own_home = false;
  env_map env;
  /// The session's one leased TCP port (§18); released when it stops.
  /// Shared only because actor arguments must be copyable.
  std::shared_ptr<port_lease> lease;
  /// The node that made the session, told `ended` when a stop completes
  /// (weak: the node holds its sessions, not the other way round).
  caf::actor_addr node;
  /// The session's isolation (its config's, else the node's default); a
  /// contained session gets its namespaces at its first execution.
  isolation_mode isolation = isolation_mode::none;
  isolation_limits limits;
  /// Paths its commands cannot read (contained only).
  std::vector<std::string> deny;
  /// Host paths its view shows read-only, and writable (contained only;
  /// absolute, existing, without symbolic links).
  std::vector<std::string> allow_read;
  std::vector<std::string> allow_write;
  /// Outside destinations its commands may connect to (contained only).
  std::vector<net_destination> allow_net;
  /// A contained session's listener on 127.0.0.1:<leased port> of the
  /// host, forwarded into the session (shared: actor arguments are copied).
  std::shared_ptr<unique_fd> host_listener;
};

struct session_state;

/// Behavior of a session actor (§1–§10, §22).
session_actor_impl::behavior_type
session_behavior(session_actor_impl::stateful_pointer<session_state> self,
                 session_params params);

/// Spawns a session actor.
session_actor spawn_session(caf::actor_system& sys, session_params params);

/// Resolves the directories of `cfg` (§18: absolute, created with mkdir -p),
/// validates its env (§3) and gives the session a random UUID. An empty
/// home becomes the default home `<temp_directory>/sandbox-<uid>/home`,
/// created only at the first execution (see `session_params`).
/// Errors: `invalid_argument` (bad env name, a directory with a NUL byte,
/// naming the field), `permission_denied` or `io_error` (a directory cannot
/// be created, the current directory cannot be determined).
/// An empty working directory becomes `<base_directory>/<id>` when
/// `base_directory` is set, else the current directory. A contained
/// session's allow list is `*allow`, looked up before (see
/// `allowlist_to_resolve`), or looked up here when `allow` is null.
result<session_params>
make_session_params(runtime_ptr rt, const session_config& cfg,
                    const std::string& base_directory = {},
                    const result<std::vector<net_destination>>* allow
                    = nullptr);

/// The allow list `make_session_params` looks up (`resolve_allowlist`,
/// getaddrinfo) for `cfg`: a contained session's own or the runtime's;
/// empty when there is nothing to look up.
std::vector<std::string> allowlist_to_resolve(const runtime& rt,
                                              const session_config& cfg);

} // namespace sandbox::actors
