#define CAF_SUITE actors.node
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <set>

#include <caf/scoped_actor.hpp>

#include "fixture.hpp"
#include "runtime.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/uuid.hpp"

using namespace sandbox;
using namespace sandbox::actors;

namespace {

/// Holds a TCP port on 127.0.0.1 as an outside process would; port 0 picks
/// a free one (tests must not depend on fixed ports: suites run in
/// parallel).
struct port_holder {
  int fd = -1;
  uint16_t port = 0;
  explicit port_holder(uint16_t wanted = 0) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(wanted);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0
        || ::listen(fd, 1) != 0
        || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ::close(fd);
      fd = -1;
      return;
    }
    port = ntohs(addr.sin_port);
  }
  ~port_holder() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// A port that was free a moment ago.
uint16_t free_port() {
  port_holder probe;
  return probe.port;
}

struct node_tests_fixture {
  test::temp_dir dir;

  static runtime_config rcfg() {
    auto cfg = test::suite_runtime_config();
    cfg.stop.grace = std::chrono::milliseconds{300};
    cfg.reap_all_orphans = true;
    return cfg;
  }

  node_config ncfg(uint16_t first = 40000, uint16_t last = 49999) {
    node_config cfg;
    cfg.base_directory = dir.path + "/sessions";
    cfg.first_port = first;
    cfg.last_port = last;
    return cfg;
  }

  session_config scfg() {
    session_config cfg;
    cfg.home_directory = dir.path + "/home";
    return cfg;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(node_tests, node_tests_fixture)

CAF_TEST(S18 create resolves and creates both directories) {
  embedded_node node{rcfg(), ncfg()};
  ::chdir(dir.path.c_str());
  session_config cfg;
  cfg.working_directory = "rel/work";
  cfg.home_directory = "rel/home";
  auto s = blocking_session::create(node, cfg);
  SANDBOX_REQUIRE_OK(s);
  auto info = s->info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK_EQUAL(info->working_directory, dir.path + "/rel/work");
  CAF_CHECK_EQUAL(info->home_directory, dir.path + "/rel/home");
  CAF_CHECK(is_uuid(info->id));
  CAF_CHECK(info->port >= 40000 && info->port <= 49999);
  auto r = s->execute("pwd; echo $HOME");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data,
                  info->working_directory + "\n" + info->home_directory + "\n");
  ::chdir("/");
}

CAF_TEST(S18 home defaults to a private home under TMPDIR) {
  // The runtime reads TMPDIR once, as it is made: no node thread runs yet.
  ::setenv("TMPDIR", dir.path.c_str(), 1);
  embedded_node node{rcfg(), ncfg()};
  ::unsetenv("TMPDIR");
  CAF_CHECK_EQUAL(node.rt()->config().temp_directory, dir.path);
  auto s = blocking_session::create(node, session_config{});
  SANDBOX_REQUIRE_OK(s);
  auto info = s->info();
  SANDBOX_REQUIRE_OK(info);
  auto private_dir = dir.path + "/sandbox-" + std::to_string(::geteuid());
  // A contained session's default home is its own, below the same private
  // directory (reliability-2 A4; docs/security.md, "Identity").
  CAF_CHECK_EQUAL(info->home_directory, test::contained_run()
                                          ? private_dir + "/homes/" + info->id
                                          : private_dir + "/home");
  // Without a working directory the session gets its own under the base.
  CAF_CHECK_EQUAL(info->working_directory, dir.path + "/sessions/" + info->id);
}

CAF_TEST(a working directory the node made goes with its session when empty) {
  embedded_node node{rcfg(), ncfg()};
  auto left_empty = blocking_session::create(node, scfg());
  auto left_files = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(left_empty);
  SANDBOX_REQUIRE_OK(left_files);
  auto empty_dir = left_empty->info().value().working_directory;
  auto files_dir = left_files->info().value().working_directory;
  SANDBOX_REQUIRE_OK(left_empty->execute("true"));
  SANDBOX_REQUIRE_OK(left_files->execute("echo kept > result.txt"));
  SANDBOX_REQUIRE_OK(left_empty->stop());
  SANDBOX_REQUIRE_OK(left_files->stop());
  struct stat st;
  CAF_CHECK_NOT_EQUAL(::stat(empty_dir.c_str(), &st), 0);
  CAF_CHECK_EQUAL(::stat((files_dir + "/result.txt").c_str(), &st), 0);
  // A working directory the caller named stays, empty or not.
  auto cfg = scfg();
  cfg.working_directory = dir.path + "/named";
  auto named = blocking_session::create(node, cfg);
  SANDBOX_REQUIRE_OK(named);
  SANDBOX_REQUIRE_OK(named->stop());
  CAF_CHECK_EQUAL(::stat(cfg.working_directory.c_str(), &st), 0);
}

CAF_TEST(S18 1000 sessions created concurrently get distinct ports) {
  embedded_node node{rcfg(), ncfg()};
  caf::scoped_actor self{node.system()};
  for (int i = 0; i < 1000; ++i)
    self->send(node.node(), create_atom_v, scfg());
  std::set<uint16_t> ports;
  std::set<std::string> ids;
  int errors = 0;
  for (int i = 0; i < 1000; ++i)
    self->receive(
      [&](session_actor&, session_info& info) {
        ports.insert(info.port);
        ids.insert(info.id);
      },
      [&](caf::error& err) {
        if (errors++ == 0)
          CAF_MESSAGE("first failed creation: " << error_message(err));
      });
  CAF_CHECK_EQUAL(errors, 0);
  CAF_CHECK_EQUAL(ports.size(), 1000u);
  CAF_CHECK_EQUAL(ids.size(), 1000u);
  auto listed = node.list();
  SANDBOX_REQUIRE_OK(listed);
  CAF_CHECK_EQUAL(listed->size(), 1000u);
  auto stopped = node.stop_all();
  SANDBOX_REQUIRE_OK(stopped);
  CAF_CHECK_EQUAL(*stopped, 1000u);
  auto after = node.list();
  SANDBOX_REQUIRE_OK(after);
  CAF_CHECK_EQUAL(after->size(), 0u);
}

CAF_TEST(S18 a port held by an outside process is never leased) {
  port_holder held;
  CAF_REQUIRE(held.fd >= 0);
  // The held port is the only one in the range: nothing can be leased.
  embedded_node node{rcfg(), ncfg(held.port, held.port)};
  auto c = blocking_session::create(node, scfg());
  CAF_REQUIRE(!c);
  CAF_CHECK(c.error().code == errc::port_unavailable);
  CAF_CHECK(c.error().message.find(std::to_string(held.port))
            != std::string::npos);
  // Once the outside holder lets go, the port is leased.
  ::close(held.fd);
  held.fd = -1;
  auto d = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(d);
  auto info = d->info();
  SANDBOX_REQUIRE_OK(info);
  auto port = info->port;
  CAF_CHECK_EQUAL(port, held.port);
}

CAF_TEST(S22 ports come back after stop) {
  auto only = free_port();
  embedded_node node{rcfg(), ncfg(only, only)};
  auto a = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(a);
  auto info = a->info();
  SANDBOX_REQUIRE_OK(info);
  auto port = info->port;
  CAF_CHECK(!blocking_session::create(node, scfg()));
  SANDBOX_REQUIRE_OK(a->stop());
  auto b = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(b);
  info = b->info();
  SANDBOX_REQUIRE_OK(info);
  auto again = info->port;
  CAF_CHECK_EQUAL(again, port);
}

CAF_TEST(S19 the endpoint of a leased port serves what the session runs) {
  embedded_node node{rcfg(), ncfg()};
  auto s = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(s);
  auto info = s->info();
  SANDBOX_REQUIRE_OK(info);
  auto port = info->port;
  // A server on the leased port proves the port was bindable.
  auto server = s->spawn("exec python3 -c 'import socket,sys\n"
                         "s=socket.socket()\n"
                         "s.bind((\"127.0.0.1\","
                         + std::to_string(port)
                         + "))\nprint(\"bound\", flush=True)'");
  SANDBOX_REQUIRE_OK(server);
  auto r = server->wait();
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "bound\n");
}

CAF_TEST(S20 the restricted view shares the session process tracking) {
  embedded_node node{rcfg(), ncfg()};
  auto s = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(s);
  auto marker = test::node_fixture::marker(*s);
  restricted_session view = restricted(s->handle());
  caf::scoped_actor self{node.system()};
  self
    ->request(view, caf::infinite, execute_atom_v,
              std::string{"sleep 30 & setsid sleep 31 & true"}, exec_options{},
              chunk_sink{})
    .receive([](exec_result&) {},
             [](caf::error& err) { CAF_FAIL(caf::to_string(err)); });
  CAF_CHECK_EQUAL(test::processes_with(marker), 2u);
  auto receipt = s->stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_EQUAL(receipt->ended, 2u);
  CAF_CHECK_EQUAL(test::processes_with(marker), 0u);
}

CAF_TEST(S21 a failing on_first_create leaves no session process or lease) {
  std::string marker;
  auto only = free_port();
  auto cfg = ncfg(only, only);
  cfg.on_first_create = [&marker](caf::actor_system& sys,
                                  restricted_session view) -> caf::error {
    caf::scoped_actor self{sys};
    // Start something that would outlive a careless cleanup.
    self
      ->request(view, caf::infinite, execute_atom_v,
                std::string{"echo $SANDBOX_EXEC; sleep 30 & true"},
                exec_options{}, chunk_sink{})
      .receive(
        [&marker](exec_result& r) {
          marker = "SANDBOX_EXEC="
                   + r.stdout_data.substr(0, r.stdout_data.find('/') + 1);
        },
        [](caf::error&) {});
    return caf::make_error(errc::invalid_argument, "hook refused");
  };
  embedded_node node{rcfg(), cfg};
  auto s = blocking_session::create(node, scfg());
  CAF_REQUIRE(!s);
  CAF_CHECK(s.error().code == errc::invalid_argument);
  CAF_CHECK_EQUAL(s.error().message, "hook refused");
  auto listed = node.list();
  SANDBOX_REQUIRE_OK(listed);
  CAF_CHECK_EQUAL(listed->size(), 0u);
  CAF_REQUIRE(!marker.empty());
  CAF_CHECK_EQUAL(test::processes_with(marker), 0u);
  // The one port of the range is free again: a second creation fails at
  // the hook, not for want of a port.
  auto again = blocking_session::create(node, scfg());
  CAF_REQUIRE(!again);
  CAF_CHECK_EQUAL(again.error().message, "hook refused");
}

CAF_TEST(S21 a passing on_first_create runs with the restricted view) {
  auto only = free_port();
  auto cfg = ncfg(only, only);
  cfg.on_first_create = [](caf::actor_system& sys,
                           restricted_session view) -> caf::error {
    caf::scoped_actor self{sys};
    caf::error out;
    self
      ->request(view, caf::infinite, execute_atom_v,
                std::string{"echo ready > .initialised"}, exec_options{},
                chunk_sink{})
      .receive([](exec_result&) {}, [&out](caf::error& err) { out = err; });
    return out;
  };
  embedded_node node{rcfg(), cfg};
  auto s = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(s);
  auto r = s->execute("cat .initialised");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "ready\n");
}

CAF_TEST(S21 resume is unsupported) {
  embedded_node node{rcfg(), ncfg()};
  caf::scoped_actor self{node.system()};
  self->request(node.node(), caf::infinite, resume_atom_v, std::string{"x"})
    .receive([](session_actor&) { CAF_FAIL("resume succeeded"); },
             [](caf::error& err) {
               CAF_CHECK_EQUAL(error_code_name(err), "unsupported");
             });
}

CAF_TEST(S22 stopping an unknown or stopped session is session_not_found) {
  embedded_node node{rcfg(), ncfg()};
  auto s = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(s);
  auto info = s->info();
  SANDBOX_REQUIRE_OK(info);
  auto id = info->id;
  SANDBOX_REQUIRE_OK(node.stop_session(id));
  auto again = node.stop_session(id);
  CAF_REQUIRE(!again);
  CAF_CHECK(again.error().code == errc::session_not_found);
  CAF_CHECK_EQUAL(again.error().message, "no such session: " + id);
}

CAF_TEST(list shows directories ports and child counts) {
  embedded_node node{rcfg(), ncfg()};
  auto s = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(s);
  auto p = s->spawn("sleep 30");
  SANDBOX_REQUIRE_OK(p);
  auto listed = node.list();
  SANDBOX_REQUIRE_OK(listed);
  CAF_REQUIRE_EQUAL(listed->size(), 1u);
  auto& info = listed->front();
  auto own = s->info();
  SANDBOX_REQUIRE_OK(own);
  CAF_CHECK_EQUAL(info.id, own->id);
  CAF_CHECK_EQUAL(info.children, 1u);
  CAF_CHECK(info.port != 0);
}

CAF_TEST(node shutdown stops every session) {
  std::string marker;
  {
    embedded_node node{rcfg(), ncfg()};
    auto s = blocking_session::create(node, scfg());
    SANDBOX_REQUIRE_OK(s);
    marker = test::node_fixture::marker(*s);
    SANDBOX_REQUIRE_OK(s->execute("sleep 30 & setsid sleep 30 & true"));
  }
  CAF_CHECK_EQUAL(test::processes_with(marker), 0u);
}

CAF_TEST_FIXTURE_SCOPE_END()
