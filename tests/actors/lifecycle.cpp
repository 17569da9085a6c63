#define CAF_SUITE actors.lifecycle
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Long-lived nodes stay bounded: finished processes, stopped sessions and
// their filesystem workers go away (also on a node that serves remote
// clients), and file operations share the node's file threads.

#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "fixture.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "served_node.hpp"

using namespace std::chrono_literals;
using namespace sandbox;
using namespace sandbox::actors;
using sandbox::thread_count;

namespace {

/// Actors of `sys` that have not terminated yet.
size_t live_actors(caf::actor_system& sys) {
  return sys.registry().running();
}

/// Waits until `live_actors(sys) <= limit`, at most 10 s. An actor goes
/// away when its last reference drops, which may happen on any thread
/// shortly after the reply that made it useless: there is no event to wait
/// for, so the count is polled; the deadline only bounds a failure.
size_t settle(caf::actor_system& sys, size_t limit) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (live_actors(sys) > limit
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  return live_actors(sys);
}

struct fixture : test::node_fixture {
  actors::session_config local() {
    actors::session_config cfg;
    cfg.working_directory = dir.path + "/work";
    cfg.home_directory = dir.path + "/home";
    return cfg;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(lifecycle_tests, fixture)

CAF_TEST(2000 spawn and wait cycles keep children and memory flat) {
  auto s = make_session();
  for (int i = 0; i < 20; ++i) {
    auto p = s.spawn("true");
    SANDBOX_REQUIRE_OK(p);
    SANDBOX_REQUIRE_OK(p->wait());
  }
  auto actors_before = live_actors(node.system());
  auto rss_before = resident_bytes();
  for (int i = 0; i < 2000; ++i) {
    auto p = s.spawn("true");
    SANDBOX_REQUIRE_OK(p);
    auto r = p->wait();
    SANDBOX_REQUIRE_OK(r);
    CAF_REQUIRE_EQUAL(r->exit_code, 0);
  }
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK_EQUAL(info->children, 0u);
  // Every process actor whose handle is gone went away (before the fix
  // each stayed until the session stopped: +2000).
  CAF_CHECK_LESS_OR_EQUAL(settle(node.system(), actors_before), actors_before);
  // About 15 KiB each were kept before: 30 MiB.
  SANDBOX_CHECK_MEMORY_BOUND(
    resident_bytes() - std::min(rss_before, resident_bytes()), 8u << 20);
}

CAF_TEST(
  plain requests of the blocking facade reuse the actors the node keeps) {
  auto& sys = node.system();
  auto before = live_actors(sys);
  SANDBOX_REQUIRE_OK(node.list());
  // The call's blocking actor is kept for the next one (before, each call
  // made a scoped actor and ended it: nothing was left).
  CAF_CHECK_EQUAL(live_actors(sys), before + 1);
  for (int i = 0; i < 50; ++i)
    SANDBOX_REQUIRE_OK(node.list());
  CAF_CHECK_EQUAL(live_actors(sys), before + 1);
  // Callers on 4 threads at once: at most one kept actor each.
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int i = 0; i < 100; ++i)
        if (!node.list())
          ++failures;
    });
  for (auto& t : callers)
    t.join();
  CAF_CHECK_EQUAL(failures.load(), 0);
  CAF_CHECK_GREATER_OR_EQUAL(live_actors(sys), before + 1);
  CAF_CHECK_LESS_OR_EQUAL(live_actors(sys), before + 4);
  // The node's end ends them (the fixture's node destructor waits for
  // every actor of its system: a kept one would hang it).
}

CAF_TEST(a finished spawned process answers wait while its handle lives) {
  auto s = make_session();
  auto p = s.spawn("exit 3");
  SANDBOX_REQUIRE_OK(p);
  auto first = p->wait();
  SANDBOX_REQUIRE_OK(first);
  CAF_CHECK_EQUAL(first->exit_code, 3);
  // The session forgot it: it no longer runs.
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK_EQUAL(info->children, 0u);
  auto again = p->wait();
  SANDBOX_REQUIRE_OK(again);
  CAF_CHECK_EQUAL(again->exit_code, 3);
  CAF_CHECK_EQUAL(again->reason, exit_reason::exited);
}

CAF_TEST(children counts running processes only) {
  auto s = make_session();
  auto p = s.spawn("sleep 30");
  SANDBOX_REQUIRE_OK(p);
  auto q = s.spawn("exit 0");
  SANDBOX_REQUIRE_OK(q);
  SANDBOX_REQUIRE_OK(q->wait());
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK_EQUAL(info->children, 1u);
  SANDBOX_REQUIRE_OK(p->kill(SIGKILL));
  SANDBOX_REQUIRE_OK(p->wait());
  info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK_EQUAL(info->children, 0u);
}

CAF_TEST(a session stopped through its handle leaves the node at once) {
  auto s = blocking_session::create(node, local());
  SANDBOX_REQUIRE_OK(s);
  auto info = s->info();
  SANDBOX_REQUIRE_OK(info);
  auto id = info->id;
  SANDBOX_REQUIRE_OK(s->stop());
  auto list = node.list();
  SANDBOX_REQUIRE_OK(list);
  CAF_CHECK_EQUAL(list->size(), 0u);
  auto again = node.stop_session(id);
  CAF_REQUIRE(!again);
  CAF_CHECK(again.error().code == errc::session_not_found);
  // §22: the handle still answers, as stopped.
  info = s->info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(info->stopped);
  auto r = s->execute("true");
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::session_stopped);
}

CAF_TEST(300 sessions stopped through their handles leave threads as before) {
  {
    // Warm-up: the lazily made parts of the scheduler and the reactor.
    auto s = blocking_session::create(node, local());
    SANDBOX_REQUIRE_OK(s);
    SANDBOX_REQUIRE_OK(s->execute("true"));
    auto files = files_of(*s);
    SANDBOX_REQUIRE_OK(files);
    SANDBOX_REQUIRE_OK(files->stat("."));
    SANDBOX_REQUIRE_OK(s->stop());
  }
  auto list_before = node.list();
  SANDBOX_REQUIRE_OK(list_before);
  auto threads_before = thread_count();
  auto actors_before = live_actors(node.system());
  for (int i = 0; i < 300; ++i) {
    auto s = blocking_session::create(node, local());
    SANDBOX_REQUIRE_OK(s);
    SANDBOX_REQUIRE_OK(s->execute("true"));
    auto files = files_of(*s);
    SANDBOX_REQUIRE_OK(files);
    SANDBOX_REQUIRE_OK(files->write_file("f", "x"));
    SANDBOX_REQUIRE_OK(files->stat("f"));
    SANDBOX_REQUIRE_OK(s->stop());
  }
  auto list = node.list();
  SANDBOX_REQUIRE_OK(list);
  CAF_CHECK_EQUAL(list->size(), list_before->size());
  // One detached thread per filesystem worker before: +300.
  CAF_CHECK_LESS_OR_EQUAL(thread_count(), threads_before);
  CAF_CHECK_LESS_OR_EQUAL(settle(node.system(), actors_before), actors_before);
}

CAF_TEST(file operations of many sessions run on the configured threads) {
  auto cfg = config();
  cfg.file_threads = 3;
  // Only files here; the fixture's node reaps the orphans.
  cfg.reap_all_orphans = false;
  embedded_node small{cfg};
  auto threads_before = thread_count();
  std::vector<blocking_session> sessions;
  std::vector<blocking_files> files;
  for (int i = 0; i < 40; ++i) {
    auto c = local();
    c.working_directory = dir.path + "/w" + std::to_string(i);
    auto s = blocking_session::create(small, c);
    SANDBOX_REQUIRE_OK(s);
    auto f = files_of(*s);
    SANDBOX_REQUIRE_OK(f);
    sessions.push_back(std::move(*s));
    files.push_back(std::move(*f));
  }
  // Every worker busy at once, from threads of their own.
  std::vector<std::thread> users;
  std::atomic<int> failures{0};
  for (auto& f : files)
    users.emplace_back([&f, &failures] {
      for (int i = 0; i < 20; ++i) {
        auto name = "f" + std::to_string(i);
        if (!f.write_file(name, std::string(4096, 'x')) || !f.read_file(name)
            || !f.list_files("."))
          ++failures;
      }
    });
  for (auto& t : users)
    t.join();
  CAF_CHECK_EQUAL(failures.load(), 0);
  CAF_CHECK_LESS_OR_EQUAL(thread_count(), threads_before);
  for (auto& s : sessions)
    SANDBOX_REQUIRE_OK(s.stop());
}

CAF_TEST(an exit status the node cannot collect is an io error) {
  auto s = make_session();
  // With SIGCHLD ignored the kernel reaps children itself: waitpid fails
  // with ECHILD, as when someone else reaped the child. The child waits
  // for its stdin, so that it is still there when its launch completes.
  struct sigaction ignore = {};
  struct sigaction old = {};
  ignore.sa_handler = SIG_IGN;
  CAF_REQUIRE_EQUAL(::sigaction(SIGCHLD, &ignore, &old), 0);
  auto p = s.spawn("read line; exit 0");
  auto closed = p ? p->close_stdin() : result<void>{};
  auto r = p ? p->wait() : result<exec_result>{p.error()};
  ::sigaction(SIGCHLD, &old, nullptr);
  SANDBOX_REQUIRE_OK(p);
  SANDBOX_REQUIRE_OK(closed);
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::io_error);
  CAF_CHECK_NOT_EQUAL(r.error().message.find("waitpid"), std::string::npos);
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK_EQUAL(info->children, 0u);
}

CAF_TEST_FIXTURE_SCOPE_END()

// -- a node that serves remote clients ----------------------------------------

CAF_TEST(a serving node releases what remote clients stopped) {
  test::served_node served;
  auto actors_before = live_actors(*served.sys);
  {
    auto client = served.connect();
    for (int i = 0; i < 20; ++i) {
      auto s = served.open_session(*client);
      auto r = s.execute("echo hi");
      SANDBOX_REQUIRE_OK(r);
      CAF_CHECK_EQUAL(r->stdout_data, "hi\n");
      auto p = s.spawn("exit 3");
      SANDBOX_REQUIRE_OK(p);
      auto w = p->wait();
      SANDBOX_REQUIRE_OK(w);
      CAF_CHECK_EQUAL(w->exit_code, 3);
      auto files = files_of(s);
      SANDBOX_REQUIRE_OK(files);
      SANDBOX_REQUIRE_OK(files->write_file("f", "x"));
      auto back = files->read_file("f");
      SANDBOX_REQUIRE_OK(back);
      CAF_CHECK_EQUAL(*back, "x");
      SANDBOX_REQUIRE_OK(s.stop());
      SANDBOX_REQUIRE_OK(s.stop());
      auto after = s.execute("true");
      CAF_REQUIRE(!after);
      CAF_CHECK(after.error().code == errc::session_stopped);
    }
    auto list = client->list();
    SANDBOX_REQUIRE_OK(list);
    CAF_CHECK_EQUAL(list->size(), 0u);
  }
  // Sessions, workers and process actors handed to the client are gone
  // (before, CAF's registry kept every one of them).
  CAF_CHECK_LESS_OR_EQUAL(settle(*served.sys, actors_before), actors_before);
  // So the serving system can be destroyed: nothing keeps it waiting.
  served.shut_down();
  CAF_CHECK(served.rt.use_count() == 1);
}
