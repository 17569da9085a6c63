#pragma once

// A node served over loopback, as the remote suites reach it: published on
// a free port of 127.0.0.1 by an actor system of its own (with mutual TLS
// when a certificate is given), and reached by clients with systems of
// their own through `remote_node`, exactly as a client in another process
// would. Include after caf/test/unit_test.hpp.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "fixture.hpp"
#include "helpers/check.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/client/blocking_session.hpp"

namespace sandbox::test {

struct served_node {
  temp_dir dir;
  actors::system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  actors::runtime_ptr rt;
  actors::node_actor node;
  uint16_t port = 0;
  actors::tls_config tls;

  /// Publishes a node configured by `ncfg` (its base directory in `dir`),
  /// with TLS when `t` is enabled, behind `door`; throws when it cannot.
  explicit served_node(actors::node_config ncfg = {}, actors::tls_config t = {},
                       const actors::door_config& door = {})
    : tls(std::move(t)) {
    actors::configure_remote(cfg, tls);
    sys = std::make_unique<caf::actor_system>(cfg);
    rt = actors::make_runtime(node_fixture::config());
    ncfg.base_directory = dir.path + "/sessions";
    node = actors::spawn_node(*sys, rt, std::move(ncfg));
    auto p = actors::publish_node(*sys, node, "127.0.0.1", 0, tls.enabled(),
                                  door);
    if (!p)
      throw std::runtime_error(p.error().message);
    port = *p;
  }

  ~served_node() {
    shut_down();
  }

  served_node(const served_node&) = delete;
  served_node& operator=(const served_node&) = delete;

  /// Stops every session, ends the node and waits for its actor system to
  /// go down: what the destructor does, for a test that checks what is left
  /// after (`rt`). Does nothing the second time.
  void shut_down() {
    if (!sys)
      return;
    {
      caf::scoped_actor self{*sys};
      self->request(node, caf::infinite, actors::stop_atom_v)
        .receive([](uint32_t) {}, [](caf::error&) {});
    }
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    node = nullptr;
    // Actors sent to a remote client stay in CAF's registry until they
    // quit; a stopped session quits (with its worker and processes), so
    // the system goes down.
    sys->await_all_actors_done();
    actors::close_actor_gate(*rt);
    sys.reset();
  }

  std::string address() const {
    return "127.0.0.1:" + std::to_string(port);
  }

  /// A client connected to the node, with `client` as its TLS settings.
  std::unique_ptr<actors::remote_node>
  connect(const actors::tls_config& client = {}) const {
    auto c = actors::remote_node::connect(address(), client);
    SANDBOX_REQUIRE_OK(c);
    return std::move(*c);
  }

  /// A new session of `client`, with its home in `dir`.
  actors::blocking_session open_session(actors::remote_node& client) const {
    actors::session_config scfg;
    scfg.home_directory = dir.path + "/home";
    auto s = actors::blocking_session::create(client, scfg);
    SANDBOX_REQUIRE_OK(s);
    return std::move(*s);
  }

  /// Connects a client (with `client` as its TLS settings), runs `echo` in
  /// a new session, and returns its output, or what failed.
  std::string echo_through_client(const actors::tls_config& client = {}) const {
    auto c = actors::remote_node::connect(address(), client);
    if (!c)
      return "connect failed: " + c.error().message;
    actors::session_config scfg;
    scfg.home_directory = dir.path + "/home";
    auto s = actors::blocking_session::create(**c, scfg);
    if (!s)
      return "create failed: " + s.error().message;
    auto r = s->execute("echo hello");
    if (!r)
      return "execute failed: " + r.error().message;
    return r->stdout_data;
  }
};

/// A client connected to a node served without TLS, for the tests of a
/// fixture scope.
struct served_fixture {
  served_node server;
  std::unique_ptr<actors::remote_node> client = server.connect();

  actors::blocking_session session() {
    return server.open_session(*client);
  }
};

} // namespace sandbox::test
