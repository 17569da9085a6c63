#define CAF_SUITE actors.flow
#include "caf/test/dsl.hpp"
#include "events.hpp"

// The message flow of one execution, pinned with CAF's test coordinator:
// every message an actor handles is counted, so that a change that adds a
// hop fails here (docs/architecture.md, "One execution, hop by hop"). The
// node's reactor runs on this thread too (a runtime made with 0 reactor
// threads, see sandbox::reactor), one callback at a time between two steps
// of the coordinator; only the children are real processes, so the test
// waits for them on the reactor, bounded. Timing is measured by the
// benchmarks, never here.

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"
#include "helpers/temp_dir.hpp"
#include "runtime.hpp"
#include "sandbox/actors/protocol.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "session/session.hpp"
#include "weak_send.hpp"

using namespace sandbox;
using namespace sandbox::actors;
using namespace std::chrono_literals;

namespace {

runtime_config driven_runtime() {
  runtime_config cfg;
  cfg.reactor_threads = 0;
  cfg.isolation = isolation_mode::none;
  return cfg;
}

/// What a message is, by its types (the values do not matter here).
std::string kind_of(const caf::type_erased_tuple& m) {
  if (m.match_elements<execute_atom, std::string, exec_options, chunk_sink>())
    return "execute";
  if (m.match_elements<exited_atom, uint64_t, int32_t, caf::error,
                       exec_result>())
    return "finished";
  if (m.match_elements<output_atom, uint64_t, int32_t, std::string>())
    return "output";
  if (m.match_elements<chunk_atom, output_chunk>())
    return "chunk";
  if (m.match_elements<ack_atom>())
    return "ack";
  if (m.match_elements<exec_result>())
    return "result";
  if (m.match_elements<caf::down_msg>())
    return "down";
  if (m.match_elements<ended_atom, uint64_t, stop_receipt>())
    return "swept";
  if (m.match_elements<ended_atom, stop_receipt>())
    return "ended";
  if (m.match_elements<cancel_atom, std::string>())
    return "cancel";
  if (m.match_elements<stop_atom>())
    return "stop";
  if (m.match_elements<timeout_atom, uint64_t>())
    return "timeout";
  if (m.match_elements<violations_atom, std::vector<violation>>())
    return "violations";
  if (m.match_elements<violations_atom>())
    return "list violations";
  return to_string(m);
}

struct flow_fixture : test_coordinator_fixture<system_config> {
  sandbox::test::temp_dir dir;
  runtime_ptr rt = make_runtime(driven_runtime());
  session_actor session;
  /// Who is who in `seen`.
  std::map<caf::abstract_actor*, std::string> names;
  /// "<receiver> <- <kind>", in the order the actors handled them.
  std::vector<std::string> seen;

  flow_fixture() {
    session_config cfg;
    cfg.working_directory = dir.path + "/work";
    cfg.home_directory = dir.path + "/home";
    auto params = make_session_params(rt, cfg);
    if (!params)
      CAF_FAIL(params.error().message);
    session = spawn_session(sys, std::move(*params));
    name(session, "session");
    run();
  }

  ~flow_fixture() override {
    // Nothing of the session is left running; then no reactor callback
    // reaches an actor any more (the system goes next).
    if (!stopped) {
      while (has_mail(self.ptr()))
        self->dequeue();
      self->send(session, stop_atom_v);
      drive_until([&] { return has_mail(self.ptr()); });
    }
    close_actor_gate(*rt);
  }

  template <class Handle>
  void name(const Handle& h, std::string n) {
    names[caf::actor_cast<caf::abstract_actor*>(h)] = std::move(n);
  }

  static bool has_mail(caf::abstract_actor* a) {
    return a->peek_at_next_mailbox_element() != nullptr;
  }

  /// The next message an actor handles, recorded, then handled. An actor
  /// nobody named is "other".
  void step() {
    auto& next = sched.next_job<caf::scheduled_actor>();
    auto* a = static_cast<caf::abstract_actor*>(&next);
    if (names.count(a) == 0)
      names[a] = "other";
    auto* m = next.peek_at_next_mailbox_element();
    seen.push_back(names[a] + " <- "
                   + (m != nullptr ? kind_of(m->content()) : "(start)"));
    sched.run_once();
  }

  /// Handles messages, and runs reactor callbacks when none is waiting
  /// (blocking for a real child's exit there), until `done` holds; fails
  /// after 10 s.
  template <class Predicate>
  void drive_until(Predicate done) {
    auto& io = rt->reactor().context();
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline)
        CAF_FAIL("the flow did not finish within 10 s; seen: "
                 << caf::deep_to_string(seen));
      if (!sched.jobs.empty())
        step();
      else
        io.run_one_for(10ms);
    }
  }

  /// Runs what is ready on the reactor and every message that follows.
  void settle() {
    auto& io = rt->reactor().context();
    for (;;) {
      while (!sched.jobs.empty())
        step();
      if (io.poll() == 0 && sched.jobs.empty())
        return;
    }
  }

  /// The reply waiting in the scoped actor's mailbox, taken out.
  template <class T>
  T reply() {
    auto* m = self->peek_at_next_mailbox_element();
    if (m == nullptr)
      CAF_FAIL("no reply");
    if (!m->content().match_elements<T>())
      CAF_FAIL("unexpected reply: " << to_string(m->content()));
    auto x = m->content().get_as<T>(0);
    self->dequeue();
    return x;
  }

  /// Sends `execute` for `cmd` and lets the session launch it.
  void begin_execution(std::string cmd, exec_options opts = {}) {
    self->send(session, execute_atom_v, std::move(cmd), std::move(opts),
               chunk_sink{});
    expect((execute_atom, std::string, exec_options, chunk_sink),
           from(self).to(session));
  }

  /// Runs the reactor and the actors until the result of the execution in
  /// flight is here; takes it.
  exec_result finish_execution() {
    drive_until([&] { return has_mail(self.ptr()); });
    auto r = reply<exec_result>();
    settle();
    return r;
  }

  /// The number of the execution whose output is `out` (its first line is
  /// `$SANDBOX_EXEC`: `<session>/<number>/`).
  static uint64_t number_in(const std::string& out) {
    auto line = out.substr(0, out.find('\n'));
    auto end = line.rfind('/');
    auto begin = line.rfind('/', end - 1);
    return std::stoull(line.substr(begin + 1, end - begin - 1));
  }

  /// The test stopped the session itself.
  bool stopped = false;
};

std::vector<std::string> sorted(std::vector<std::string> xs) {
  std::sort(xs.begin(), xs.end());
  return xs;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(flow_tests, flow_fixture)

CAF_TEST(an execution nobody streams takes two messages and its reply) {
  auto before = sys.latest_actor_id();
  begin_execution("echo out; echo err >&2");
  // The session launched the child and runs the execution itself: the
  // reactor reports once, status and output (nobody streams), and the
  // session answers.
  auto* s = caf::actor_cast<caf::abstract_actor*>(session);
  drive_until([&] { return has_mail(s); });
  expect((exited_atom, uint64_t, int32_t, caf::error, exec_result),
         to(session));
  auto r = reply<exec_result>();
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data, "out\n");
  CAF_CHECK_EQUAL(r.stderr_data, "err\n");
  // Nothing else: no message per output chunk, none after the result, and
  // no actor was made for it.
  settle();
  CAF_CHECK_EQUAL(seen, std::vector<std::string>{});
  CAF_CHECK(!has_mail(self.ptr()));
  CAF_CHECK_EQUAL(sys.latest_actor_id(), before);
}

CAF_TEST(a streamed execution sends a chunk per read and one report) {
  std::vector<output_chunk> chunks;
  auto sink = sys.spawn([&chunks]() -> chunk_sink::behavior_type {
    return {[&chunks](chunk_atom, output_chunk& c) {
      chunks.push_back(std::move(c));
      return ack_atom_v;
    }};
  });
  name(sink, "sink");
  run();
  auto before = sys.latest_actor_id();
  self->send(session, execute_atom_v, std::string{"echo out"}, exec_options{},
             sink);
  drive_until([&] { return has_mail(self.ptr()); });
  auto r = reply<exec_result>();
  settle();
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data, "out\n");
  CAF_REQUIRE_EQUAL(chunks.size(), 1u);
  CAF_CHECK_EQUAL(chunks[0].data, "out\n");
  // The reactor: one read, then one report (the exit, after both streams
  // ended); the sink acknowledges the chunk (its credit for the next read).
  CAF_CHECK_EQUAL(sorted(seen),
                  sorted({"session <- execute", "session <- output",
                          "sink <- chunk", "session <- ack",
                          "session <- finished"}));
  CAF_CHECK_EQUAL(sys.latest_actor_id(), before);
}

CAF_TEST(a cancel ends the execution with its sweep) {
  exec_options opts;
  opts.cancel_key = "k";
  begin_execution("exec sleep 30", opts);
  self->send(session, cancel_atom_v, std::string{"k"});
  drive_until([&] { return has_mail(self.ptr()); });
  CAF_CHECK_EQUAL(reply<bool>(), true);
  auto r = finish_execution();
  CAF_CHECK(r.reason == exit_reason::cancelled);
  CAF_CHECK_EQUAL(r.exit_code, 130);
  // The sweep's receipt and the reactor's one report, in either order.
  CAF_CHECK_EQUAL(sorted(seen), sorted({"session <- cancel", "session <- swept",
                                        "session <- finished"}));
}

CAF_TEST(a stop ends a running execution and answers with its receipt) {
  begin_execution("exec sleep 30");
  stopped = true;
  self->send(session, stop_atom_v);
  // The execution's result first: the receipt waits for it.
  drive_until([&] { return has_mail(self.ptr()); });
  auto r = reply<exec_result>();
  CAF_CHECK(r.reason == exit_reason::stopped);
  drive_until([&] { return has_mail(self.ptr()); });
  auto receipt = reply<stop_receipt>();
  settle();
  CAF_CHECK_EQUAL(receipt.survivors, 0u);
  // The session marks the execution and sweeps; the result goes out once
  // the reactor reported, the receipt once the sweep did too.
  CAF_CHECK_EQUAL(sorted(seen), sorted({"session <- stop", "session <- ended",
                                        "session <- finished"}));
}

CAF_TEST(a late timeout of an earlier execution ends nothing) {
  exec_options timed;
  timed.timeout = std::chrono::hours(1);
  begin_execution("echo $SANDBOX_EXEC", timed);
  auto first = finish_execution();
  CAF_CHECK(first.reason == exit_reason::exited);
  exec_options keyed;
  keyed.cancel_key = "k";
  begin_execution("exec sleep 30", keyed);
  // The first execution's timer, had it fired after its result.
  self->send(caf::actor_cast<session_actor_impl>(session), timeout_atom_v,
             number_in(first.stdout_data));
  settle();
  CAF_CHECK_EQUAL(seen.back(), "session <- timeout");
  CAF_CHECK(!has_mail(self.ptr()));
  self->send(session, cancel_atom_v, std::string{"k"});
  drive_until([&] { return has_mail(self.ptr()); });
  CAF_CHECK_EQUAL(reply<bool>(), true);
  auto r = finish_execution();
  CAF_CHECK(r.reason == exit_reason::cancelled);
}

CAF_TEST(violations of a running execution go to its result and of an ended one
           to the session) {
  begin_execution("echo $SANDBOX_EXEC");
  auto first = number_in(finish_execution().stdout_data);
  exec_options keyed;
  keyed.cancel_key = "k";
  begin_execution("exec sleep 30", keyed);
  // The next execution's number: nothing else took one meanwhile.
  auto second = first + 1;
  std::vector<violation> reports{
    violation{violation_kind::read_denied, first, "/late"},
    violation{violation_kind::read_denied, second, "/running"}};
  self->send(caf::actor_cast<session_actor_impl>(session), violations_atom_v,
             reports);
  settle();
  self->send(session, cancel_atom_v, std::string{"k"});
  drive_until([&] { return has_mail(self.ptr()); });
  CAF_CHECK_EQUAL(reply<bool>(), true);
  auto r = finish_execution();
  CAF_REQUIRE_EQUAL(r.violations.size(), 1u);
  CAF_CHECK_EQUAL(r.violations[0].detail, "/running");
  // The session keeps both: the late one at once, the other with the
  // result.
  self->send(session, violations_atom_v);
  settle();
  auto kept = reply<std::vector<violation>>();
  std::vector<std::string> details;
  for (auto& v : kept)
    details.push_back(v.detail);
  CAF_CHECK_EQUAL(sorted(details), sorted({"/late", "/running"}));
}

CAF_TEST_FIXTURE_SCOPE_END()

// The blocking facade on a real node: a streamed call sends its request
// straight to the session from the calling thread's actor, which is the
// sink and gets the result last; no actor is made for it (a relay actor per
// call was, before). Actor ids are never reused: the latest one is the
// count of actors made.

namespace {

struct facade_flow_fixture : sandbox::test::node_fixture {
  caf::actor_id latest() {
    return node.system().latest_actor_id();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(facade_flow_tests, facade_flow_fixture)

CAF_TEST(a streamed execution through the facade makes no actor) {
  auto s = make_session();
  auto stream = [&](const std::string& cmd) {
    std::string seen;
    auto r = s.execute_streaming(cmd, {}, [&](const output_chunk& c) {
      seen += c.data;
    });
    CAF_REQUIRE(r);
    CAF_CHECK_EQUAL(seen, r->stdout_data);
    return r->stdout_data;
  };
  // The first call makes the blocking actor the node keeps for the facade.
  CAF_CHECK_EQUAL(stream("echo one"), "one\n");
  auto before = latest();
  for (int i = 0; i < 3; ++i)
    CAF_CHECK_EQUAL(stream("echo two; echo three"), "two\nthree\n");
  CAF_CHECK_EQUAL(latest(), before);
}

CAF_TEST(a streamed read through the facade makes no actor and ends clean) {
  auto s = make_session();
  auto r = s.execute("head -c 300000 /dev/zero > f");
  CAF_REQUIRE(r && r->exit_code == 0);
  auto files = files_of(s);
  CAF_REQUIRE(files);
  uint64_t got = 0;
  auto read = [&] {
    got = 0;
    return files->read_stream(
      "f",
      [&](const std::string& chunk) {
        got += chunk.size();
        return true;
      },
      65536);
  };
  CAF_REQUIRE(read());
  auto before = latest();
  auto n = read();
  CAF_REQUIRE(n);
  CAF_CHECK_EQUAL(*n, 300000u);
  CAF_CHECK_EQUAL(got, 300000u);
  CAF_CHECK_EQUAL(latest(), before);
  // A read the caller cancels ends with its error, and the facade's next
  // call finds nothing of it (its actor went back with an empty mailbox).
  auto cancelled = files->read_stream(
    "f", [](const std::string&) { return false; }, 65536);
  CAF_REQUIRE(!cancelled);
  CAF_CHECK(cancelled.error().code == errc::aborted);
  auto again = read();
  CAF_REQUIRE(again);
  CAF_CHECK_EQUAL(*again, 300000u);
  CAF_CHECK_EQUAL(got, 300000u);
}

CAF_TEST_FIXTURE_SCOPE_END()

// A reactor callback's message: the actor it wakes takes its turn on the
// reactor's thread at once (`send_now_if_alive`), so that a child's exit
// reaches its session without waking a scheduler thread; whatever that
// turn wakes in turn goes to the scheduler. The actors here start lazily
// (`lazy_init`): idle from the start, as a session between two events is,
// so the event is what wakes them.

namespace {

struct turn_fixture : sandbox::test::node_fixture {
  caf::actor_system& sys = node.system();
  std::shared_ptr<actor_gate> gate = std::make_shared<actor_gate>();

  weak_target target(const caf::actor& a) {
    auto strong = caf::actor_cast<caf::strong_actor_ptr>(a);
    return {caf::weak_actor_ptr{strong.get()}, gate};
  }

  /// An idle actor that tells `ran` which thread handled its one message.
  caf::actor recorder(std::promise<std::thread::id>& ran) {
    return sys.spawn<caf::lazy_init>(
      [&ran](caf::event_based_actor* self) -> caf::behavior {
        return {[&ran, self](int32_t) {
          ran.set_value(std::this_thread::get_id());
          self->quit();
        }};
      });
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(reactor_turn_tests, turn_fixture)

CAF_TEST(an actor a reactor event wakes handles it on the reactor thread) {
  std::promise<std::thread::id> ran;
  auto a = recorder(ran);
  CAF_REQUIRE(send_now_if_alive<caf::actor>(true, target(a), int32_t{1}));
  // Handled before the send returned, here: no wait.
  auto f = ran.get_future();
  CAF_REQUIRE(f.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
  CAF_CHECK_EQUAL(f.get(), std::this_thread::get_id());
}

CAF_TEST(without now the event goes to the scheduler) {
  std::promise<std::thread::id> ran;
  auto a = recorder(ran);
  CAF_REQUIRE(send_now_if_alive<caf::actor>(false, target(a), int32_t{1}));
  CAF_CHECK_NOT_EQUAL(ran.get_future().get(), std::this_thread::get_id());
}

CAF_TEST(what a reactor turn sends wakes its receiver on the scheduler) {
  std::promise<std::thread::id> second_ran;
  auto second = recorder(second_ran);
  std::thread::id first_ran;
  auto first = sys.spawn<caf::lazy_init>(
    [&first_ran, second](caf::event_based_actor* self) -> caf::behavior {
      return {[&first_ran, second, self](int32_t x) {
        first_ran = std::this_thread::get_id();
        self->send(second, x);
        self->quit();
      }};
    });
  CAF_REQUIRE(send_now_if_alive<caf::actor>(true, target(first), int32_t{1}));
  CAF_CHECK_EQUAL(first_ran, std::this_thread::get_id());
  CAF_CHECK_NOT_EQUAL(second_ran.get_future().get(),
                      std::this_thread::get_id());
}

CAF_TEST(a reactor turn that spawns leaves no hold on the actor system) {
  // CAF 0.17 keeps its logger in the storage of each thread that spawns,
  // and the system's destructor waits for the logger's last reference: a
  // reactor thread, which outlives the system, must not keep one.
  auto a = sys.spawn<caf::lazy_init>([](caf::event_based_actor* self) {
    return caf::behavior{[self](int32_t) {
      self->spawn([] { return caf::behavior{[](int32_t) {}}; });
      self->quit();
    }};
  });
  bool sent = false;
  bool held = true;
  std::thread reactor_thread{[&] {
    sent = send_now_if_alive<caf::actor>(true, target(a), int32_t{1});
    held = caf::logger::current_logger() != nullptr;
  }};
  reactor_thread.join();
  CAF_CHECK(sent);
  CAF_CHECK(!held);
}

CAF_TEST(a closed gate takes no event) {
  bool ran = false;
  auto a = sys.spawn(
    [&ran] { return caf::behavior{[&ran](int32_t) { ran = true; }}; });
  gate->close();
  CAF_CHECK(!send_now_if_alive<caf::actor>(true, target(a), int32_t{1}));
  CAF_CHECK(!ran);
  caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

CAF_TEST_FIXTURE_SCOPE_END()
