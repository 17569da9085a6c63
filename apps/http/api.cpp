#include "api.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <fmt/format.h>

#include "ask.hpp"
#include "sandbox/uuid.hpp"
#include "sandbox/validation.hpp"
#include "sink.hpp"

namespace sandbox::http {

// -- session_owners
// -------------------------------------------------------------

void session_owners::add(const std::string& id, const std::string& identity) {
  std::lock_guard<std::mutex> guard{mtx_};
  owners_[id] = identity;
}

void session_owners::remove(const std::string& id) {
  std::lock_guard<std::mutex> guard{mtx_};
  owners_.erase(id);
}

std::optional<std::string> session_owners::owner(const std::string& id) const {
  std::lock_guard<std::mutex> guard{mtx_};
  if (auto i = owners_.find(id); i != owners_.end())
    return i->second;
  return std::nullopt;
}

// -- members ------------------------------------------------------------------

const json* members::get(const std::string& name) {
  asked_.push_back(name);
  auto i = body_.find(name);
  if (i == body_.end() || i->is_null())
    return nullptr;
  return &*i;
}

std::optional<std::string> members::string(const std::string& name,
                                           bool required) {
  auto* v = get(name);
  if (v == nullptr) {
    if (required && error_.empty())
      error_ = fmt::format("missing member \"{}\" (a string)", name);
    return std::nullopt;
  }
  if (!v->is_string()) {
    if (error_.empty())
      error_ = fmt::format("member \"{}\" must be a string, got {}", name,
                           v->type_name());
    return std::nullopt;
  }
  return v->get<std::string>();
}

env_map members::env(const std::string& name) {
  env_map out;
  auto* v = get(name);
  if (v == nullptr)
    return out;
  if (!v->is_object()) {
    if (error_.empty())
      error_ = fmt::format("member \"{}\" must be an object of strings, got "
                           "{}",
                           name, v->type_name());
    return out;
  }
  for (auto& [k, x] : v->items()) {
    if (!x.is_string()) {
      if (error_.empty())
        error_ = fmt::format("member \"{}\": the value of {} must be a string, "
                             "got {}",
                             name, quote_for_message(k), x.type_name());
      return out;
    }
    out[k] = x.get<std::string>();
  }
  return out;
}

std::optional<bool> members::boolean(const std::string& name) {
  auto* v = get(name);
  if (v == nullptr)
    return std::nullopt;
  if (!v->is_boolean()) {
    if (error_.empty())
      error_ = fmt::format("member \"{}\" must be true or false, got {}", name,
                           v->type_name());
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<double> members::number(const std::string& name, double lo,
                                      double hi) {
  auto* v = get(name);
  if (v == nullptr)
    return std::nullopt;
  if (!v->is_number()) {
    if (error_.empty())
      error_ = fmt::format("member \"{}\" must be a number, got {}", name,
                           v->type_name());
    return std::nullopt;
  }
  auto x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    if (error_.empty())
      error_ = fmt::format("member \"{}\" must be from {} to {}, got {}", name,
                           lo, hi, v->dump());
    return std::nullopt;
  }
  return x;
}

std::optional<std::string> members::unknown() const {
  for (auto& [k, v] : body_.items())
    if (std::find(asked_.begin(), asked_.end(), k) == asked_.end())
      return k;
  return std::nullopt;
}

bool members_ok(const exchange_ptr& ex, const members& m) {
  if (!m.error().empty()) {
    ex->fail(status::bad_request, "invalid_argument", m.error());
    return false;
  }
  if (auto u = m.unknown()) {
    ex->fail(status::bad_request, "invalid_argument",
             fmt::format("unknown member {}", quote_for_message(*u)));
    return false;
  }
  return true;
}

exec_options exec_options_of(members& m) {
  exec_options opts;
  if (auto cwd = m.string("cwd", false))
    opts.cwd = *cwd;
  opts.env = m.env("env");
  if (auto t = m.number("timeout", 0, 1e9))
    opts.timeout = std::chrono::milliseconds{
      static_cast<int64_t>(std::llround(*t * 1000))};
  return opts;
}

void method_not_allowed(const exchange_ptr& ex, std::string_view allowed) {
  ex->fail(status::method_not_allowed, "method_not_allowed",
           fmt::format("{} is not allowed on {} (allowed: {})",
                       ex->head().method_name, ex->head().target, allowed),
           {{"Allow", std::string{allowed}}});
}

// -- api_context
// ----------------------------------------------------------------

bool api_context::is_admin(const std::string& identity) const {
  return std::find(admins.begin(), admins.end(), identity) != admins.end();
}

bool api_context::may_use(const std::string& identity,
                          const std::string& id) const {
  if (is_admin(identity))
    return true;
  auto o = owners.owner(id);
  return o && *o == identity;
}

namespace {

void no_such_session(const exchange_ptr& ex, const std::string& id) {
  ex->fail(status::not_found, "session_not_found",
           fmt::format("no session {}", quote_for_message(id)));
}

} // namespace

void api_context::with_session(
  const exchange_ptr& ex, const std::string& id,
  std::function<void(actors::session_actor)> then) {
  if (!may_use(ex->head().identity, id))
    return no_such_session(ex, id);
  ask(
    sys, node,
    [then = std::move(then)](actors::session_actor& s) { then(std::move(s)); },
    [this, ex, id](const sandbox::error& err) {
      if (err.code == errc::session_not_found) {
        owners.remove(id);
        return no_such_session(ex, id);
      }
      ex->fail(err);
    },
    actors::get_atom_v, id);
}

void api_context::read_json(const exchange_ptr& ex,
                            std::function<void(json)> then) {
  auto& type = ex->head().header("content-type");
  if (!ex->head().empty_body && type.rfind("application/json", 0) != 0)
    return ex->fail(status::unsupported_media_type, "unsupported_media_type",
                    fmt::format("the body must be application/json, got {}",
                                type.empty() ? std::string{"no content type"}
                                             : quote_for_message(type)));
  ex->read_body(
    door.max_json_bytes, [ex, then = std::move(then)](std::string body) {
      if (body.empty())
        return then(json::object());
      auto j = json::parse(body, nullptr, false);
      if (j.is_discarded())
        return ex->fail(status::bad_request, "invalid_argument",
                        "the body is not valid JSON (or not valid UTF-8)");
      if (!j.is_object())
        return ex->fail(status::bad_request, "invalid_argument",
                        fmt::format("the body must be a JSON object, got {}",
                                    j.type_name()));
      then(std::move(j));
    });
}

void api_context::create_session(
  const exchange_ptr& ex, const json& body, const std::string& identity,
  std::function<void(actors::session_actor, actors::session_info)> then) {
  members m{body};
  actors::session_config cfg;
  if (auto wd = m.string("working_directory", false))
    cfg.working_directory = *wd;
  cfg.env = m.env("env");
  if (auto iso = m.string("isolation", false)) {
    isolation_mode mode;
    if (*iso == "none")
      mode = isolation_mode::none;
    else if (*iso == "contained")
      mode = isolation_mode::contained;
    else
      return ex->fail(status::bad_request, "invalid_argument",
                      fmt::format("member \"isolation\" must be \"none\" or "
                                  "\"contained\", got {}",
                                  quote_for_message(*iso)));
    cfg.isolation = mode;
  }
  if (!members_ok(ex, m))
    return;
  // Nobody's actor watches it: it lives until a DELETE (or the node's end).
  cfg.detached = true;
  ask(
    sys, ex, node,
    [this, identity, then = std::move(then)](actors::session_actor& s,
                                             actors::session_info& info) {
      owners.add(info.id, identity);
      then(std::move(s), std::move(info));
    },
    actors::create_atom_v, std::move(cfg));
}

// -- exec and code
// --------------------------------------------------------------

namespace {

/// The cancel key of an execution started over HTTP.
std::string http_cancel_key() {
  return "http-" + make_uuid_v4();
}

} // namespace

void route_exec(api_context& api, const exchange_ptr& ex,
                const actors::session_actor& s, bool code) {
  if (ex->head().method != verb::post)
    return method_not_allowed(ex, "POST");
  api.read_json(ex, [&api, ex, s, code](json body) {
    members m{body};
    std::optional<std::string> command, language;
    if (code) {
      command = m.string("code", true);
      language = m.string("language", true);
    } else {
      command = m.string("command", true);
    }
    auto opts = exec_options_of(m);
    if (!members_ok(ex, m))
      return;
    opts.cancel_key = http_cancel_key();
    // A client that goes away cancels its command.
    ex->on_gone([s, key = opts.cancel_key] {
      caf::anon_send(s, actors::cancel_atom_v, key);
    });
    auto& accept = ex->head().header("accept");
    bool stream = accept.find("application/x-ndjson") != std::string::npos;
    if (!stream) {
      auto on_ok = [ex](exec_result& r) {
        ex->reply(status::ok, wire::result_json(r, true));
      };
      if (code)
        return ask(api.sys, ex, s, std::move(on_ok), actors::code_atom_v,
                   std::move(*command), std::move(*language), std::move(opts),
                   actors::chunk_sink{});
      return ask(api.sys, ex, s, std::move(on_ok), actors::execute_atom_v,
                 std::move(*command), std::move(opts), actors::chunk_sink{});
    }
    auto sink = spawn_sink(api.sys, ex, "application/x-ndjson",
                           api.door.heartbeat);
    auto typed = caf::actor_cast<actors::chunk_sink>(sink);
    auto on_ok = [sink](exec_result& r) {
      caf::anon_send(sink, actors::end_atom_v,
                     wire::line(wire::result_json(r, false)) + "\n");
    };
    auto on_err = [sink](const sandbox::error& err) { end_sink(sink, err); };
    if (code)
      return ask(api.sys, s, std::move(on_ok), std::move(on_err),
                 actors::code_atom_v, std::move(*command), std::move(*language),
                 std::move(opts), typed);
    ask(api.sys, s, std::move(on_ok), std::move(on_err), actors::execute_atom_v,
        std::move(*command), std::move(opts), typed);
  });
}

// -- the router
// -------------------------------------------------------------------

namespace {

void route_sessions(api_context& api, const exchange_ptr& ex) {
  auto& who = ex->head().identity;
  switch (ex->head().method) {
    case verb::get:
      return ask(
        api.sys, ex, api.node,
        [&api, ex, who](std::vector<actors::session_info>& list) {
          auto out = json::array();
          for (auto& info : list)
            if (api.may_use(who, info.id))
              out.push_back(wire::session_json(info));
          ex->reply(status::ok,
                    {{"type", "sessions"}, {"sessions", std::move(out)}});
        },
        actors::list_atom_v);
    case verb::post:
      return api.read_json(ex, [&api, ex, who](json body) {
        api.create_session(
          ex, body, who,
          [ex](actors::session_actor, actors::session_info info) {
            ex->reply(status::created, wire::session_json(info),
                      {{"Location", "/v1/sessions/" + info.id}});
          });
      });
    default:
      return method_not_allowed(ex, "GET, POST");
  }
}

void route_session(api_context& api, const exchange_ptr& ex,
                   const std::string& id) {
  switch (ex->head().method) {
    case verb::get:
      return api.with_session(ex, id, [&api, ex](actors::session_actor s) {
        ask(
          api.sys, ex, s,
          [ex](actors::session_info& info) {
            ex->reply(status::ok, wire::session_json(info));
          },
          actors::info_atom_v);
      });
    case verb::delete_:
      if (!api.may_use(ex->head().identity, id))
        return no_such_session(ex, id);
      return ask(
        api.sys, api.node,
        [&api, ex, id](stop_receipt& r) {
          api.owners.remove(id);
          ex->reply(status::ok, {{"type", "stopped"},
                                 {"id", id},
                                 {"ended", r.ended},
                                 {"killed", r.killed},
                                 {"survivors", r.survivors}});
        },
        [&api, ex, id](const sandbox::error& err) {
          if (err.code == errc::session_not_found) {
            api.owners.remove(id);
            return no_such_session(ex, id);
          }
          ex->fail(err);
        },
        actors::stop_atom_v, id);
    default:
      return method_not_allowed(ex, "GET, DELETE");
  }
}

} // namespace

void route_v1(api_context& api, const exchange_ptr& ex) {
  auto& seg = ex->head().segments;
  // seg[0] == "v1"
  if (seg.size() == 2 && seg[1] == "sessions")
    return route_sessions(api, ex);
  if (seg.size() >= 3 && seg[1] == "sessions") {
    auto& id = seg[2];
    if (seg.size() == 3)
      return route_session(api, ex, id);
    auto& what = seg[3];
    if ((what == "exec" || what == "code") && seg.size() == 4)
      return api.with_session(
        ex, id, [&api, ex, code = what == "code"](actors::session_actor s) {
          route_exec(api, ex, s, code);
        });
    if (what == "processes")
      return api.with_session(ex, id, [&api, ex, id](actors::session_actor s) {
        route_processes(api, ex, id, s);
      });
    if (what == "files" || what == "list" || what == "stat")
      return api.with_session(ex, id,
                              [&api, ex, what](actors::session_actor s) {
                                route_files(api, ex, s, what);
                              });
  }
  ex->fail(status::not_found, "not_found",
           fmt::format("no route {}", quote_for_message(ex->head().target)));
}

} // namespace sandbox::http
