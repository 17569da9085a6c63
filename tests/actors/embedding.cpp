#define CAF_SUITE actors.embedding
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Embedding without side effects: what a node changes in the process that
// hosts it (see docs/api.md, "What embedding a node changes").

#include <signal.h>
#include <sys/prctl.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"
#include "helpers/serve_process.hpp"
#include "helpers/temp_dir.hpp"
#include "runtime.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"

namespace {

struct process_state {
  struct sigaction chld;
  struct sigaction pipe;
  int subreaper = -1;
};

process_state current() {
  process_state s;
  ::sigaction(SIGCHLD, nullptr, &s.chld);
  ::sigaction(SIGPIPE, nullptr, &s.pipe);
  ::prctl(PR_GET_CHILD_SUBREAPER, &s.subreaper);
  return s;
}

} // namespace

namespace {

void check_host(const std::vector<std::string>& options) {
  sandbox::test::temp_dir dir;
  std::vector<std::string> args{SANDBOX_TEST_NODE_HOST, "host", dir.path};
  args.insert(args.end(), options.begin(), options.end());
  auto r = sandbox::test::spawn_capture(args);
  CAF_MESSAGE("node host said:\n" << r.out);
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out.find("FAIL"), std::string::npos);
  for (auto name :
       {"sigpipe-default-with-node", "sigchld-handler-kept-with-node",
        "mask-kept-with-node", "no-subreaper-with-node", "watchdog-runs",
        "watchdog-not-a-child", "session", "orphans-not-ours",
        "waitpid-no-eintr", "own-status-kept", "own-handler-runs",
        "sigpipe-default-after-node", "sigchld-handler-kept-after-node",
        "mask-kept-after-node", "no-subreaper-after-node", "watchdog-exits",
        "no-zombies"})
    CAF_CHECK(r.out.find(std::string{"ok "} + name + "\n")
              != std::string::npos);
}

} // namespace

// Run by a program that links sandbox::actors only (not sandbox::publish),
// with an embedded node and a node published over TLS.
CAF_TEST(a host keeps its own accept and its own openssl contexts) {
  sandbox::test::temp_dir dir;
  auto r
    = sandbox::test::spawn_capture({SANDBOX_TEST_NODE_HOST, "net", dir.path});
  CAF_MESSAGE("node host said:\n" << r.out);
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK_EQUAL(r.out.find("FAIL"), std::string::npos);
  // accept() is libc's; a connection the host accepts, on a port of its
  // own or on the published node's port number at another address, gets
  // the kernel's lowest free number and no close-on-exec; its SSL_CTX keeps
  // a null info callback and OpenSSL's TLS 1.3 suites, made on its main
  // thread or on a thread of its own; one made on a thread of the node's
  // actor system is observed.
  for (auto name :
       {"accept-is-libc", "published", "tls-client-connects", "tls-session",
        "own-accept-same-port", "own-accept", "own-ssl-ctx",
        "own-ssl-ctx-thread", "caf-thread-ssl-ctx-observed"})
    CAF_CHECK(r.out.find(std::string{"ok "} + name + "\n")
              != std::string::npos);
}

CAF_TEST(a host keeps its signals its children and their exit statuses) {
  check_host({});
}

CAF_TEST(the same holds in the process group mode) {
  check_host({"process-group"});
}

CAF_TEST(
  a node only process is a subreaper with restarting calls till its end) {
  auto before = current();
  CAF_REQUIRE_EQUAL(before.subreaper, 0);
  {
    auto cfg = sandbox::test::suite_runtime_config();
    cfg.reap_all_orphans = true;
    cfg.containment = sandbox::actors::containment_choice::process_group;
    sandbox::actors::embedded_node node{cfg};
    auto during = current();
    CAF_CHECK_EQUAL(during.subreaper, 1);
    CAF_CHECK((during.chld.sa_flags & SA_RESTART) != 0);
    CAF_CHECK(during.pipe.sa_handler == before.pipe.sa_handler);
  }
  auto after = current();
  CAF_CHECK_EQUAL(after.subreaper, 0);
  CAF_CHECK(after.chld.sa_handler == before.chld.sa_handler);
  // glibc adds SA_RESTORER (0x04000000) to every disposition it installs.
  constexpr int restorer = 0x04000000;
  CAF_CHECK_EQUAL(after.chld.sa_flags & ~restorer,
                  before.chld.sa_flags & ~restorer);
  CAF_CHECK(after.pipe.sa_handler == before.pipe.sa_handler);
}

CAF_TEST(an embedded node leaves the child signal disposition alone) {
  auto before = current();
  {
    sandbox::actors::embedded_node node{sandbox::test::suite_runtime_config()};
    auto during = current();
    CAF_CHECK_EQUAL(during.subreaper, before.subreaper);
    CAF_CHECK(during.chld.sa_handler == before.chld.sa_handler);
    CAF_CHECK(during.pipe.sa_handler == before.pipe.sa_handler);
  }
}

CAF_TEST(in the cgroup mode even a node only process is no subreaper) {
  auto before = current();
  auto cfg = sandbox::test::suite_runtime_config();
  cfg.reap_all_orphans = true;
  sandbox::actors::embedded_node node{cfg};
  if (node.rt()->containment() != sandbox::containment_mode::cgroup) {
    CAF_MESSAGE("no writable cgroup v2 here: the cgroup mode is not tested");
    return;
  }
  auto during = current();
  CAF_CHECK_EQUAL(during.subreaper, before.subreaper);
  CAF_CHECK(during.chld.sa_handler == before.chld.sa_handler);
}

// CAF 0.17 keeps its logger in the storage of every thread that makes an
// actor there (a facade call makes its blocking actor on the caller's
// thread), and an actor system's destructor waits until the last such
// reference is gone: a host thread that once called the facade and
// outlives the node would hold the node's destruction until it exits.
CAF_TEST(a host thread that called the facade does not hold the node end) {
  sandbox::test::temp_dir dir;
  std::promise<void> used;
  std::promise<void> node_gone;
  std::thread host_thread;
  bool ok = false;
  {
    sandbox::actors::embedded_node node{sandbox::test::suite_runtime_config()};
    host_thread = std::thread([&] {
      {
        sandbox::actors::session_config cfg;
        cfg.working_directory = dir.path + "/work";
        auto s = sandbox::actors::blocking_session::create(node, cfg);
        ok = s && s->info() && s->execute("true") && s->stop();
      } // The thread holds nothing of the node any more.
      used.set_value();
      // Alive until the node is gone.
      node_gone.get_future().wait();
    });
    used.get_future().wait();
  } // The node ends here, while the host thread lives.
  node_gone.set_value();
  host_thread.join();
  CAF_CHECK(ok);
}
