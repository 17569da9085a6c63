#pragma once

// The JSON API under /v1 (private; docs/http.md): sessions, executions,
// processes and files of the node, for the identity a request's token
// names.

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "exchange.hpp"
#include "http/server.hpp"
#include "sandbox/actors/protocol.hpp"

namespace sandbox::http {

/// Which identity made each session created over HTTP.
class session_owners {
public:
  void add(const std::string& id, const std::string& identity);
  void remove(const std::string& id);
  std::optional<std::string> owner(const std::string& id) const;

private:
  mutable std::mutex mtx_;
  std::map<std::string, std::string> owners_;
};

/// What the routes share.
struct api_context {
  caf::actor_system& sys;
  actors::node_actor node;
  std::vector<std::string> admins;
  limits door;
  session_owners owners;

  bool is_admin(const std::string& identity) const;

  /// Whether `identity` may use session `id`: its creator and the admins.
  bool may_use(const std::string& identity, const std::string& id) const;

  /// Finds session `id` for the request's identity and runs `then` with it;
  /// answers 404 `session_not_found` itself.
  void with_session(const exchange_ptr& ex, const std::string& id,
                    std::function<void(actors::session_actor)> then);

  /// Reads a JSON object body (at most `door.max_json_bytes`); answers 415
  /// for another content type and 400 for malformed JSON or another kind
  /// of value. An empty body counts as `{}`.
  void read_json(const exchange_ptr& ex, std::function<void(json)> then);

  /// Creates a session for `identity` (its config from a JSON object);
  /// `then` gets its handle and info, errors go to `ex`.
  void create_session(
    const exchange_ptr& ex, const json& body, const std::string& identity,
    std::function<void(actors::session_actor, actors::session_info)> then);
};

/// The members of a JSON request body, checked one by one: each getter
/// names the member in its error. `unknown` reports a member no getter
/// asked for.
class members {
public:
  explicit members(const json& body) : body_(body) {
  }

  std::optional<std::string> string(const std::string& name, bool required);
  env_map env(const std::string& name);
  std::optional<bool> boolean(const std::string& name);
  /// A number within [lo, hi].
  std::optional<double> number(const std::string& name, double lo, double hi);
  /// The first member not asked for, if any.
  std::optional<std::string> unknown() const;

  /// The first error, empty while there is none.
  const std::string& error() const {
    return error_;
  }

private:
  const json* get(const std::string& name);

  const json& body_;
  std::vector<std::string> asked_;
  std::string error_;
};

/// Checks `m` after its getters; answers 400 naming the first bad member
/// and returns false.
bool members_ok(const exchange_ptr& ex, const members& m);

/// The routes below /v1/sessions/{id}/ (segments from index 3 on).
void route_exec(api_context& api, const exchange_ptr& ex,
                const actors::session_actor& s, bool code);
void route_processes(api_context& api, const exchange_ptr& ex,
                     const std::string& session_id,
                     const actors::session_actor& s);
void route_files(api_context& api, const exchange_ptr& ex,
                 const actors::session_actor& s, const std::string& kind);

/// Reads `cwd`, `env` and `timeout` of an exec or process body.
exec_options exec_options_of(members& m);

/// Answers 405 naming the methods `allowed`.
void method_not_allowed(const exchange_ptr& ex, std::string_view allowed);

/// Serves one request below /v1.
void route_v1(api_context& api, const exchange_ptr& ex);

} // namespace sandbox::http
