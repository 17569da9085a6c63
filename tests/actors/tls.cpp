#define CAF_SUITE actors.tls
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>

#include <caf/actor_registry.hpp>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "fixture.hpp"
#include "helpers/tls_files.hpp"
#include "sandbox/actors/node.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/tls.hpp"
#include "sandbox/client/blocking_session.hpp"

using namespace sandbox;
using namespace sandbox::actors;
using namespace std::chrono_literals;

namespace {

// How long a refused connection may take to fail. Refusals on loopback
// take milliseconds; the bound only turns a hang into a failed check.
constexpr auto connect_bound = 10s;

/// The message of a failed validation ("" when it passed).
std::string refusal(const tls_config& cfg) {
  auto res = validate(cfg);
  if (res)
    return "";
  CAF_CHECK_EQUAL(to_string(res.error().code), "invalid_argument");
  return res.error().message;
}

bool contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos)
    return true;
  CAF_MESSAGE("'" << text << "' does not contain '" << part << "'");
  return false;
}

/// A node published on a free loopback port, with TLS when `tls` is
/// enabled. Members are destroyed in reverse: the actor system before the
/// runtime its actors share.
struct published_node {
  runtime_ptr rt;
  system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  node_actor node;
  uint16_t port = 0;

  published_node(const test::temp_dir& dir, const tls_config& tls) {
    auto rcfg = test::suite_runtime_config();
    rcfg.stop.grace = 300ms;
    rt = make_runtime(rcfg);
    configure_network(cfg, tls);
    sys = std::make_unique<caf::actor_system>(cfg);
    node_config ncfg;
    ncfg.base_directory = dir.at("sessions");
    node = spawn_node(*sys, rt, ncfg);
    auto res = tls.enabled() ? caf::openssl::publish(node, 0, "127.0.0.1")
                             : sys->middleman().publish(node, 0, "127.0.0.1");
    if (!res)
      CAF_FAIL("cannot publish the node: " << sys->render(res.error()));
    port = *res;
  }

  ~published_node() {
    {
      caf::scoped_actor self{*sys};
      self->request(node, caf::infinite, stop_atom_v)
        .receive([](uint32_t) {}, [](const caf::error&) {});
      // Published, the node is held by the registry as well: it ends only
      // when told to.
      self->send_exit(node, caf::exit_reason::user_shutdown);
      self->wait_for(node);
    }
    node = nullptr;
    sys.reset();
  }
};

/// One client process's view: an actor system of its own, with or without
/// TLS, and the outcome of connecting to the node.
struct client {
  system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  tls_config tls_cfg;
  bool tls;

  explicit client(const tls_config& cfg_tls)
    : tls_cfg(cfg_tls), tls(cfg_tls.enabled()) {
    configure_network(cfg, cfg_tls);
    sys = std::make_unique<caf::actor_system>(cfg);
  }

  ~client() {
    // Workaround: the session owner of this client (`client_owner` in
    // remote.cpp) is a named registry entry, destroyed with the registry
    // after the scheduler is gone (segfault in local_actor::cleanup). End
    // it while the system still runs.
    auto key = caf::atom("sbx_owner");
    if (auto owner = sys->registry().get(key)) {
      sys->registry().erase(key);
      caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
    }
  }

  /// caf::openssl without any file: anonymous TLS, as CAF does it.
  struct anonymous_t {};
  explicit client(anonymous_t) : tls(true) {
    cfg.load<caf::io::middleman>();
    cfg.load<caf::openssl::manager>();
    sys = std::make_unique<caf::actor_system>(cfg);
  }

  /// Connects as caf::openssl::remote_actor (or caf::io's) does, but gives
  /// up after `connect_bound`: CAF's own call waits without a deadline.
  caf::expected<node_actor> connect(uint16_t port) {
    auto mm = tls ? sys->openssl_manager().actor_handle()
                  : sys->middleman().actor_handle();
    caf::scoped_actor self{*sys};
    caf::expected<node_actor> out{caf::sec::request_timeout};
    self
      ->request(mm, connect_bound, caf::connect_atom_v,
                std::string{"127.0.0.1"}, port)
      .receive(
        [&](const caf::node_id&, caf::strong_actor_ptr& ptr,
            const std::set<std::string>&) {
          if (ptr)
            out = caf::actor_cast<node_actor>(std::move(ptr));
          else
            out = caf::sec::no_actor_published_at_port;
        },
        [&](caf::error& err) { out = std::move(err); });
    return out;
  }

  /// Connects and expects a refusal: an error other than the request's
  /// own timeout (`connect_bound`, a deadline, not a measurement). Returns
  /// the error as a client reports it.
  std::string refused(uint16_t port) {
    auto start = std::chrono::steady_clock::now();
    auto res = connect(port);
    auto took = std::chrono::steady_clock::now() - start;
    CAF_CHECK(!res);
    if (res)
      return "";
    auto text = "node 127.0.0.1:" + std::to_string(port) + ": "
                + describe_handshake_failure("127.0.0.1", port,
                                             tls_cfg.enabled(), res.error());
    CAF_MESSAGE(
      "refused after "
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms: " << text);
    CAF_CHECK_NOT_EQUAL(res.error(), caf::sec::request_timeout);
    return text;
  }

  /// Stops `s` and ends its actor. A stopped session's actor stays alive
  /// while anything refers to it, and a handle that went over the network
  /// is kept by the node's actor registry: without the exit, the node's
  /// actor system would wait for it forever at shutdown.
  static void end_session(blocking_session& s) {
    (void) s.stop();
    caf::anon_send_exit(s.handle(), caf::exit_reason::user_shutdown);
  }

  /// Creates a session on `node` and runs `echo hi` there.
  std::string echo(const node_actor& node, const test::temp_dir& dir) {
    session_config scfg;
    scfg.home_directory = dir.at("home");
    auto s = blocking_session::create(*sys, node, scfg);
    if (!s)
      return "session: " + s.error().message;
    auto res = s->execute("echo hi");
    auto out = res ? res->stdout_data : "execute: " + res.error().message;
    end_session(*s);
    return out;
  }
};

struct tls_fixture {
  test::tls_files files;
  test::temp_dir dir;

  tls_config node_tls() const {
    return {files.node_cert, files.node_key, files.ca};
  }

  tls_config client_tls() const {
    return {files.client_cert, files.client_key, files.ca};
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(tls_tests, tls_fixture)

// -- validate -----------------------------------------------------------------

CAF_TEST(validate accepts no TLS at all and a complete valid set) {
  CAF_CHECK_EQUAL(refusal(tls_config{}), "");
  CAF_CHECK_EQUAL(refusal(node_tls()), "");
  CAF_CHECK_EQUAL(refusal(client_tls()), "");
}

CAF_TEST(validate names the missing flag when only some files are given) {
  auto cfg = node_tls();
  cfg.key_file.clear();
  CAF_CHECK(contains(refusal(cfg), "--tls-key (the TLS key) is missing"));
  cfg = node_tls();
  cfg.certificate_file.clear();
  CAF_CHECK(contains(refusal(cfg), "--tls-cert"));
  cfg = tls_config{};
  cfg.ca_file = files.ca;
  CAF_CHECK(contains(refusal(cfg), "--tls-cert (the TLS certificate)"));
  cfg = node_tls();
  cfg.ca_file.clear();
  CAF_CHECK(contains(refusal(cfg), "--tls-ca (the TLS CA) is missing"));
}

CAF_TEST(validate names a file it cannot read and why) {
  auto cfg = node_tls();
  cfg.certificate_file = dir.at("missing.pem");
  auto msg = refusal(cfg);
  CAF_CHECK(contains(msg, "cannot read the TLS certificate "
                            + dir.at("missing.pem")
                            + " (--tls-cert): No such file or directory"));
  cfg = node_tls();
  cfg.ca_file = dir.path;
  CAF_CHECK(contains(refusal(cfg), "the TLS CA " + dir.path
                                     + " (--tls-ca) is not a regular file"));
  if (::geteuid() == 0) {
    CAF_MESSAGE("running as root: permissions do not stop reads, skipped");
    return;
  }
  auto key = files.write("locked.key", test::tls_files::read(files.node_key));
  ::chmod(key.c_str(), 0);
  cfg = node_tls();
  cfg.key_file = key;
  CAF_CHECK(contains(refusal(cfg), "cannot read the TLS key " + key
                                     + " (--tls-key): Permission denied"));
}

CAF_TEST(validate refuses files that are not the PEM they should be) {
  auto junk = files.write("junk.pem", "not a certificate\n");
  auto cfg = node_tls();
  cfg.certificate_file = junk;
  CAF_CHECK(
    contains(refusal(cfg), "the TLS certificate " + junk
                             + " (--tls-cert) holds no PEM certificate"));
  // A key where the certificate should be.
  cfg.certificate_file = files.node_key;
  CAF_CHECK(contains(refusal(cfg), "holds no PEM certificate"));
  cfg = node_tls();
  cfg.key_file = junk;
  CAF_CHECK(
    contains(refusal(cfg),
             "the TLS key " + junk + " (--tls-key) holds no PEM private key"));
  // A certificate where the key should be.
  cfg.key_file = files.node_cert;
  CAF_CHECK(contains(refusal(cfg), "holds no PEM private key"));
  cfg = node_tls();
  cfg.ca_file = junk;
  CAF_CHECK(contains(refusal(cfg), "the TLS CA " + junk + " (--tls-ca)"));
  // A key where the CA should be.
  cfg.ca_file = files.node_key;
  CAF_CHECK(contains(refusal(cfg), "holds no PEM certificate"));
  // A certificate whose base64 body was damaged.
  auto text = test::tls_files::read(files.node_cert);
  text[text.size() / 2] = text[text.size() / 2] == 'A' ? 'B' : 'A';
  auto damaged = files.write("damaged.pem", text);
  cfg = node_tls();
  cfg.certificate_file = damaged;
  CAF_CHECK(contains(refusal(cfg), damaged));
}

CAF_TEST(validate refuses a key that does not match the certificate) {
  auto cfg = node_tls();
  cfg.key_file = files.stray_key;
  CAF_CHECK(contains(refusal(cfg), "the TLS key " + files.stray_key
                                     + " (--tls-key) does not match the TLS "
                                       "certificate "
                                     + files.node_cert));
  cfg.key_file = files.client_key;
  CAF_CHECK(contains(refusal(cfg), "does not match"));
}

CAF_TEST(validate refuses an encrypted key instead of prompting for it) {
  auto cfg = client_tls();
  cfg.key_file = files.encrypted_key;
  CAF_CHECK(contains(refusal(cfg), "the TLS key " + files.encrypted_key
                                     + " (--tls-key) is encrypted"));
}

CAF_TEST(validate refuses an expired certificate) {
  files.run("openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key"
            " -days -1 -out expired.pem");
  auto cfg = node_tls();
  cfg.certificate_file = files.dir.at("expired.pem");
  CAF_CHECK(contains(refusal(cfg), "(--tls-cert) expired on "));
}

CAF_TEST(validate refuses what OpenSSL would refuse at the first connection) {
  // RSA 1024 is below OpenSSL's default security level: CAF would only
  // find out when a peer connects.
  files.run("openssl req -x509 -newkey rsa:1024 -nodes -days 1"
            " -subj /CN=weak -keyout weak.key -out weak.pem");
  tls_config cfg{files.dir.at("weak.pem"), files.dir.at("weak.key"), files.ca};
  CAF_CHECK(contains(refusal(cfg), "OpenSSL refuses the TLS certificate "
                                     + files.dir.at("weak.pem")));
}

// -- mutual TLS between actor systems -----------------------------------------

CAF_TEST(a client with a certificate of the CA reaches the node over TLS) {
  published_node srv{dir, node_tls()};
  client good{client_tls()};
  auto node = good.connect(srv.port);
  CAF_REQUIRE(node);
  CAF_CHECK_EQUAL(good.echo(*node, dir), "hi\n");
}

CAF_TEST(clients without a certificate the node trusts are refused) {
  published_node srv{dir, node_tls()};
  client good{client_tls()};
  auto node = good.connect(srv.port);
  CAF_REQUIRE(node);
  session_config scfg;
  scfg.home_directory = dir.at("home");
  auto session = blocking_session::create(*good.sys, *node, scfg);
  CAF_REQUIRE(session);
  // TLS without a certificate: caf::openssl then offers anonymous
  // ciphers only.
  {
    client anonymous{client::anonymous_t{}};
    anonymous.refused(srv.port);
  }
  // A certificate signed by another CA.
  {
    client stranger{
      {files.other_client_cert, files.other_client_key, files.ca}};
    auto msg = stranger.refused(srv.port);
    // The reason comes from the node's alert, when the client reads it
    // before the node's close resets the connection.
    CAF_CHECK(contains(msg, "node 127.0.0.1:" + std::to_string(srv.port)
                              + ": TLS handshake failed: the node "));
  }
  // Plain caf::io, no TLS at all.
  {
    client plain{tls_config{}};
    auto msg = plain.refused(srv.port);
    CAF_CHECK(contains(msg, "the connection ended during the handshake; a "
                            "node that serves with TLS needs --tls-cert"));
  }
  // The node still serves the session made before, and new clients.
  // (Without the repair in tls.cpp, the errors the refused handshakes left
  // on CAF's network thread dropped this client's connection: the execute
  // below never got an answer.)
  auto res = session->execute("echo still");
  CAF_REQUIRE(res);
  CAF_CHECK_EQUAL(res->stdout_data, "still\n");
  client again{client_tls()};
  auto node2 = again.connect(srv.port);
  CAF_REQUIRE(node2);
  CAF_CHECK_EQUAL(again.echo(*node2, dir), "hi\n");
  client::end_session(*session);
}

CAF_TEST(a client refuses a node whose certificate its CA did not sign) {
  published_node srv{dir, node_tls()};
  client wary{
    {files.other_client_cert, files.other_client_key, files.other_ca}};
  auto msg = wary.refused(srv.port);
  CAF_CHECK(contains(msg, "TLS handshake failed: the node's certificate did "
                          "not verify against --tls-ca: "));
}

CAF_TEST(a TLS client refuses a node that serves without TLS) {
  published_node srv{dir, tls_config{}};
  client good{client_tls()};
  auto msg = good.refused(srv.port);
  // "the node does not speak TLS (wrong version number)" when the client
  // read the node's first bytes, "the node ended the connection at once"
  // when the node's close reset the connection first.
  CAF_CHECK(contains(msg, "TLS handshake failed: the node "));
}

CAF_TEST_FIXTURE_SCOPE_END()
