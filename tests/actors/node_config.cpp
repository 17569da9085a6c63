#define CAF_SUITE actors.node_config
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
#include <caf/scoped_actor.hpp>

#include "fixture.hpp"
#include "handoff_policy.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/client/embedded_node.hpp"

using namespace std::chrono_literals;
using namespace sandbox;
using namespace sandbox::actors;

namespace {

/// A job the handoff policy only passes around (never resumed).
struct fake_job : caf::resumable {
  resume_result resume(caf::execution_unit*, size_t) override {
    return done;
  }
  void intrusive_ptr_add_ref_impl() override {
  }
  void intrusive_ptr_release_impl() override {
  }
};

/// Just enough of CAF's coordinator and worker for the policy's calls.
struct fake_coordinator {
  handoff_policy::coordinator_data d{nullptr};
  handoff_policy::coordinator_data& data() {
    return d;
  }
};

struct fake_worker {
  fake_coordinator* p;
  handoff_policy::worker_data d{nullptr};
  handoff_policy::worker_data& data() {
    return d;
  }
  fake_coordinator* parent() {
    return p;
  }
};

/// Checks the scheduler of `sys`: the policy's name and the workers.
void check_scheduler(caf::actor_system& sys, caf::atom_value policy,
                     size_t workers) {
  CAF_CHECK_EQUAL(
    caf::get_or(sys.config(), "scheduler.policy", caf::atom("none")), policy);
  CAF_CHECK_EQUAL(sys.scheduler().num_workers(), workers);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Checks that `cfg` is refused as `invalid_argument` naming `what`.
void check_refused(const runtime_config& cfg, const std::string& what) {
  auto ok = validate(cfg);
  CAF_REQUIRE(!ok);
  CAF_CHECK(ok.error().code == errc::invalid_argument);
  if (!contains(ok.error().message, what))
    CAF_FAIL("message does not name " << what << ": " << ok.error().message);
}

struct fixture {
  test::temp_dir dir;

  session_config scfg() {
    session_config cfg;
    cfg.home_directory = dir.path + "/home";
    return cfg;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(node_config_tests, fixture)

CAF_TEST(the default configurations are valid) {
  CAF_CHECK(validate(runtime_config{}));
  CAF_CHECK(validate(node_config{}));
}

CAF_TEST(an inverted port range is refused at every request naming it) {
  node_config ncfg;
  ncfg.first_port = 50000;
  ncfg.last_port = 40000;
  auto ok = validate(ncfg);
  CAF_REQUIRE(!ok);
  CAF_CHECK(ok.error().code == errc::invalid_argument);
  CAF_CHECK(contains(ok.error().message, "50000-40000"));
  embedded_node node{test::suite_runtime_config(), ncfg};
  // The node does not die: every request gets the same error, not a
  // `request_receiver_down`.
  for (int i = 0; i < 2; ++i) {
    auto s = blocking_session::create(node, scfg());
    CAF_REQUIRE(!s);
    CAF_CHECK(s.error().code == errc::invalid_argument);
    CAF_CHECK(contains(s.error().message, "50000-40000"));
  }
  auto all = node.list();
  CAF_REQUIRE(!all);
  CAF_CHECK(all.error().code == errc::invalid_argument);
  auto stopped = node.stop_all();
  CAF_REQUIRE(!stopped);
  CAF_CHECK(stopped.error().code == errc::invalid_argument);
}

CAF_TEST(an empty port range is refused) {
  node_config ncfg;
  ncfg.first_port = 0;
  ncfg.last_port = 0;
  auto ok = validate(ncfg);
  CAF_REQUIRE(!ok);
  CAF_CHECK(contains(ok.error().message, "0-0"));
  embedded_node node{test::suite_runtime_config(), ncfg};
  auto s = blocking_session::create(node, scfg());
  CAF_REQUIRE(!s);
  CAF_CHECK(s.error().code == errc::invalid_argument);
}

CAF_TEST(the node schedules its actors by handoff with a worker per core) {
  embedded_node node{test::suite_runtime_config(), node_config{}};
  auto& sys = node.system();
  auto cores = std::max(1u, std::thread::hardware_concurrency());
  check_scheduler(sys, caf::atom("handoff"), cores);
  auto s = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(s);
  auto r = s->execute("echo scheduled");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "scheduled\n");
}

CAF_TEST(the embedder chooses the policy and the workers of the node) {
  node_config ncfg;
  ncfg.scheduler.policy = scheduler_policy::stealing;
  ncfg.scheduler.threads = 3;
  CAF_CHECK(validate(ncfg));
  embedded_node node{test::suite_runtime_config(), ncfg};
  auto& sys = node.system();
  check_scheduler(sys, caf::atom("stealing"), 3u);
  auto s = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(s);
  auto r = s->execute("echo stolen");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "stolen\n");
  // The same keys for an embedder that makes its own actor system.
  system_config cfg;
  ncfg.scheduler = {scheduler_policy::sharing, 1};
  configure_scheduler(cfg, ncfg.scheduler);
  CAF_CHECK_EQUAL(caf::get_or(cfg, "scheduler.policy", caf::atom("none")),
                  caf::atom("sharing"));
  CAF_CHECK_EQUAL(caf::get_or(cfg, "scheduler.max-threads", size_t{0}), 1u);
  // A second call replaces the first one's choice, the handoff scheduler's
  // module included.
  auto modules = cfg.module_factories.size();
  ncfg.scheduler = {scheduler_policy::handoff, 2};
  configure_scheduler(cfg, ncfg.scheduler);
  CAF_CHECK_EQUAL(cfg.module_factories.size(), modules + 1);
  configure_scheduler(cfg, ncfg.scheduler);
  CAF_CHECK_EQUAL(cfg.module_factories.size(), modules + 1);
  configure_scheduler(cfg, {scheduler_policy::stealing, 2});
  CAF_CHECK_EQUAL(cfg.module_factories.size(), modules);
  CAF_CHECK_EQUAL(caf::get_or(cfg, "scheduler.policy", caf::atom("none")),
                  caf::atom("stealing"));
}

CAF_TEST(a handoff worker runs the job its job made ready next) {
  fake_coordinator coordinator;
  fake_worker worker{&coordinator};
  handoff_policy policy;
  fake_job queued, made, newer, more;
  auto& queue = coordinator.data().queue;
  policy.central_enqueue(&coordinator, &queued);
  CAF_CHECK(policy.dequeue(&worker) == &queued);
  // A job made ready by the worker's job waits in the slot, not the queue,
  // and runs next.
  policy.internal_enqueue(&worker, &made);
  CAF_CHECK(queue.empty());
  CAF_CHECK(policy.dequeue(&worker) == &made);
  // A second one takes the slot; the first goes to the queue, where
  // another worker can take it.
  policy.internal_enqueue(&worker, &made);
  policy.internal_enqueue(&worker, &newer);
  CAF_REQUIRE_EQUAL(queue.size(), 1u);
  CAF_CHECK(queue.front() == &made);
  CAF_CHECK(policy.dequeue(&worker) == &newer);
  CAF_CHECK(policy.dequeue(&worker) == &made);
  CAF_CHECK(queue.empty());
  // After 3 slot jobs in a row, the queue's first job comes first (here
  // `queued`); the slot's job goes to the queue's end.
  policy.internal_enqueue(&worker, &made);
  CAF_CHECK(policy.dequeue(&worker) == &made);
  policy.internal_enqueue(&worker, &newer);
  CAF_CHECK(policy.dequeue(&worker) == &newer);
  policy.internal_enqueue(&worker, &made);
  CAF_CHECK(policy.dequeue(&worker) == &made);
  policy.central_enqueue(&coordinator, &queued);
  policy.internal_enqueue(&worker, &more);
  CAF_CHECK(policy.dequeue(&worker) == &queued);
  CAF_CHECK(policy.dequeue(&worker) == &more);
  // At shutdown, a job left in a slot is cleaned up with the queue's.
  policy.internal_enqueue(&worker, &made);
  std::vector<caf::resumable*> left;
  policy.foreach_resumable(&worker,
                           [&](caf::resumable* j) { left.push_back(j); });
  CAF_CHECK(left == std::vector<caf::resumable*>{&made});
}

CAF_TEST(a handoff node runs what a node runs) {
  node_config ncfg;
  ncfg.scheduler = {scheduler_policy::handoff, 2};
  embedded_node node{test::suite_runtime_config(), ncfg};
  check_scheduler(node.system(), caf::atom("handoff"), 2u);
  auto s = blocking_session::create(node, scfg());
  SANDBOX_REQUIRE_OK(s);
  auto r = s->execute("echo handed");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "handed\n");
}

CAF_TEST(two actors that message each other leave a handoff worker to others) {
  node_config ncfg;
  ncfg.scheduler = {scheduler_policy::handoff, 1};
  embedded_node node{test::suite_runtime_config(), ncfg};
  auto& sys = node.system();
  // Two actors bounce a message between them until `done`: each hop puts
  // the other in the worker's slot. The only worker must still run the
  // caller's request (after 3 slot jobs in a row, it takes the queue's).
  auto done = std::make_shared<std::atomic<bool>>(false);
  auto bouncer = [done](caf::event_based_actor* self) {
    return caf::behavior{[self, done](info_atom, caf::actor other) {
      self->send(other, info_atom_v, caf::actor_cast<caf::actor>(self));
      if (done->load())
        self->quit();
    }};
  };
  auto a = sys.spawn(bouncer);
  auto b = sys.spawn(bouncer);
  caf::anon_send(a, info_atom_v, b);
  auto other = sys.spawn([done]() -> caf::behavior {
    return {[done](info_atom) {
      done->store(true);
      return uint64_t{1};
    }};
  });
  caf::scoped_actor caller{sys};
  bool answered = false;
  caller->request(other, 30s, info_atom_v)
    .receive([&](uint64_t) { answered = true; },
             [](caf::error& err) { CAF_FAIL("starved: " << to_string(err)); });
  CAF_CHECK(answered);
  caller->send_exit(other, caf::exit_reason::user_shutdown);
}

CAF_TEST(too many scheduler threads are refused at every request naming them) {
  node_config ncfg;
  ncfg.scheduler.threads = max_scheduler_threads + 1;
  auto ok = validate(ncfg);
  CAF_REQUIRE(!ok);
  CAF_CHECK(ok.error().code == errc::invalid_argument);
  CAF_CHECK(contains(ok.error().message, "node_config.scheduler.threads 257"));
  ncfg.scheduler.threads = max_scheduler_threads;
  CAF_CHECK(validate(ncfg));
  ncfg.scheduler.threads = 1000000;
  // The actor system keeps CAF's default worker count; the node refuses.
  embedded_node node{test::suite_runtime_config(), ncfg};
  CAF_CHECK(node.system().scheduler().num_workers() <= 64u);
  auto s = blocking_session::create(node, scfg());
  CAF_REQUIRE(!s);
  CAF_CHECK(s.error().code == errc::invalid_argument);
  CAF_CHECK(contains(s.error().message, "scheduler.threads 1000000"));
}

CAF_TEST(a base directory with a NUL byte is refused) {
  node_config ncfg;
  ncfg.base_directory = std::string("/tmp/a\0b", 8);
  auto ok = validate(ncfg);
  CAF_REQUIRE(!ok);
  CAF_CHECK(ok.error().code == errc::invalid_argument);
  CAF_CHECK(contains(ok.error().message, "base_directory"));
}

CAF_TEST(every unusable runtime value is refused naming it) {
  auto with = [](auto change) {
    runtime_config cfg;
    change(cfg);
    return cfg;
  };
  check_refused(with([](runtime_config& c) { c.shell = ""; }), "shell");
  check_refused(with([](runtime_config& c) { c.shell = "sh"; }), "shell");
  check_refused(with([](runtime_config& c) { c.shell = "/no/such/shell"; }),
                "/no/such/shell");
  check_refused(with([](runtime_config& c) { c.shell = "/"; }), "shell");
  check_refused(
    with([](runtime_config& c) { c.shell = std::string("/bin/sh\0x", 9); }),
    "shell");
  test::temp_dir dir;
  auto plain = dir.path + "/plain";
  CAF_REQUIRE_EQUAL(std::system(("touch '" + plain + "'").c_str()), 0);
  check_refused(with([&](runtime_config& c) { c.shell = plain; }), plain);
  check_refused(with([](runtime_config& c) { c.reactor_threads = 0; }),
                "reactor_threads");
  check_refused(with([](runtime_config& c) { c.output_cap = 0; }),
                "output_cap");
  check_refused(with([](runtime_config& c) { c.file_threads = 0; }),
                "file_threads");
  check_refused(with([](runtime_config& c) { c.file_threads = 65; }),
                "file_threads 65");
  check_refused(with([](runtime_config& c) { c.stop.first = 0; }),
                "stop.first");
  check_refused(with([](runtime_config& c) { c.stop.first = SIGRTMAX + 1; }),
                "stop.first");
  check_refused(with([](runtime_config& c) { c.stop.grace = -1ms; }),
                "stop.grace");
  check_refused(with([](runtime_config& c) { c.stop.verify = -1ms; }),
                "stop.verify");
  check_refused(with([](runtime_config& c) { c.stop.poll = 0ms; }),
                "stop.poll");
  check_refused(with([](runtime_config& c) { c.linger = -1ms; }), "linger");
  check_refused(with([](runtime_config& c) {
                  c.temp_directory = std::string("/tmp\0x", 6);
                }),
                "temp_directory");
}

CAF_TEST(every unusable isolation_deny entry is refused naming it) {
  auto with_deny = [](std::string entry) {
    runtime_config cfg;
    cfg.isolation_deny = {"/etc/fine", std::move(entry)};
    return cfg;
  };
  check_refused(with_deny(""), "isolation_deny");
  check_refused(with_deny(std::string("/etc/a\0b", 9)), "isolation_deny");
  check_refused(with_deny(std::string("/etc/a\0b", 9)), "/etc/a");
  check_refused(with_deny("relative/key.pem"), "isolation_deny");
  check_refused(with_deny("relative/key.pem"), "relative/key.pem");
  check_refused(with_deny("./key.pem"), "./key.pem");
  // Absolute paths are accepted, whether they exist or not (missing ones
  // are skipped when a session is contained).
  runtime_config fine;
  fine.isolation_deny = {"/etc/hostname", "/no/such/path", "/"};
  CAF_CHECK(validate(fine));
}

CAF_TEST(a node with a relative isolation_deny entry refuses every create) {
  auto rcfg = test::suite_runtime_config();
  rcfg.isolation_deny = {"tls/key.pem"};
  embedded_node node{rcfg, node_config{}};
  auto s = blocking_session::create(node, scfg());
  CAF_REQUIRE(!s);
  CAF_CHECK(s.error().code == errc::invalid_argument);
  CAF_CHECK(contains(s.error().message, "isolation_deny"));
  CAF_CHECK(contains(s.error().message, "tls/key.pem"));
}

CAF_TEST(a node whose runtime config is unusable refuses every create) {
  auto rcfg = test::suite_runtime_config();
  rcfg.shell = "/no/such/shell";
  embedded_node node{rcfg, node_config{}};
  auto s = blocking_session::create(node, scfg());
  CAF_REQUIRE(!s);
  CAF_CHECK(s.error().code == errc::invalid_argument);
  CAF_CHECK(contains(s.error().message, "/no/such/shell"));
}

CAF_TEST_FIXTURE_SCOPE_END()
