#define CAF_SUITE actors.remote_faults
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// What a network brings, against real `sandbox serve` processes on free
// loopback ports: a node that dies (SIGKILL) under a streaming command, a
// listing and a blocking execute; a client that dies while its session
// runs; garbage and half handshakes on the node's port.

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "fixture.hpp"
#include "helpers/serve_process.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "sandbox/process/proc_stats.hpp"

using namespace sandbox;
using namespace sandbox::actors;
using std::chrono::steady_clock;

namespace {

using seconds_f = std::chrono::duration<double>;

/// Open descriptors of process `pid`.
size_t fds_of(pid_t pid) {
  return sandbox::open_fd_count(pid);
}

/// Whether process `pid` exists (and is not a zombie).
bool alive(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string line;
  if (!std::getline(in, line))
    return false;
  auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2
         && line[close + 2] != 'Z';
}

/// The host's pid of the process that a command run by the node `node`
/// printed as `pid` (`echo $!`): the descendant of `node` whose innermost
/// pid (the last of `NSpid` in /proc/PID/status) is `pid`. That is `pid`
/// itself for a session of isolation `none`; a contained session's
/// commands see the pids of its own PID namespace. -1 when none is found.
pid_t host_pid(pid_t node, pid_t pid) {
  auto procs = proc_snapshot();
  auto descends = [&](pid_t p) {
    for (int depth = 0; p > 1 && depth < 64; ++depth) {
      auto it = std::find_if(procs.begin(), procs.end(),
                             [p](const proc_entry& e) { return e.pid == p; });
      if (it == procs.end())
        return false;
      if (it->ppid == node)
        return true;
      p = it->ppid;
    }
    return false;
  };
  for (auto& e : procs) {
    std::ifstream in{"/proc/" + std::to_string(e.pid) + "/status"};
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("NSpid:", 0) == 0)
        break;
    auto last = line.find_last_of(" \t");
    if (last == std::string::npos || std::atoi(line.c_str() + last + 1) != pid)
      continue;
    if (descends(e.pid))
      return e.pid;
  }
  return -1;
}

/// Waits until `cond` holds or `limit` passed; returns whether it held.
template <class F>
bool eventually(F cond, std::chrono::milliseconds limit) {
  auto deadline = steady_clock::now() + limit;
  while (!cond()) {
    if (steady_clock::now() >= deadline)
      return false;
    // Polling a condition of another process, bounded by the deadline.
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return true;
}

/// A raw TCP connection to 127.0.0.1:port.
int raw_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

uint16_t port_of(const std::string& address) {
  return static_cast<uint16_t>(
    std::stoul(address.substr(address.rfind(':') + 1)));
}

struct fault_fixture {
  test::temp_dir dir;

  std::unique_ptr<remote_node> connect(const test::serve_process& node) {
    auto c = remote_node::connect(node.address);
    if (!c)
      CAF_FAIL("cannot connect: " << c.error().message);
    return std::move(*c);
  }

  blocking_session session(remote_node& node, const std::string& wd = {}) {
    session_config cfg;
    cfg.working_directory = wd;
    cfg.home_directory = dir.at("home");
    auto s = blocking_session::create(node, cfg);
    if (!s)
      CAF_FAIL("cannot create a session: " << s.error().message);
    return std::move(*s);
  }
};

/// Checks that `err` is the node_unreachable error naming `address`.
#define CHECK_UNREACHABLE(err, address)                                        \
  do {                                                                         \
    CAF_CHECK_EQUAL((err).code, errc::node_unreachable);                       \
    CAF_CHECK((err).message.find(address) != std::string::npos);               \
  } while (false)

} // namespace

CAF_TEST_FIXTURE_SCOPE(remote_fault_tests, fault_fixture)

CAF_TEST(a node killed while a command streams fails the call) {
  test::serve_process node;
  auto client = connect(node);
  auto s = session(*client);
  steady_clock::time_point killed;
  auto r = s.execute_streaming("yes", {}, [&](const output_chunk&) {
    if (node.pid > 0) {
      killed = steady_clock::now();
      node.stop(SIGKILL);
    }
  });
  auto took = seconds_f{steady_clock::now() - killed}.count();
  CAF_REQUIRE(!r);
  CHECK_UNREACHABLE(r.error(), node.address);
  CAF_MESSAGE("failed " << took << " s after the kill");
  // Every later call fails the same way at once.
  auto again = s.execute("true");
  CAF_REQUIRE(!again);
  CHECK_UNREACHABLE(again.error(), node.address);
}

CAF_TEST(a node killed while a listing runs ends it) {
  test::serve_process node;
  auto client = connect(node);
  auto s = session(*client, dir.path);
  auto made = s.execute("mkdir big && cd big && seq 1 20000 | xargs touch");
  SANDBOX_REQUIRE_OK(made);
  CAF_REQUIRE_EQUAL(made->exit_code, 0);
  auto files = files_of(s);
  SANDBOX_REQUIRE_OK(files);
  steady_clock::time_point killed;
  auto done = files->list("big", 1, [&](const fs::frame&) {
    if (node.pid > 0) {
      killed = steady_clock::now();
      node.stop(SIGKILL);
    }
    return true;
  });
  auto took = seconds_f{steady_clock::now() - killed}.count();
  CAF_REQUIRE(done.error);
  CHECK_UNREACHABLE(*done.error, node.address);
  CAF_CHECK_LESS(done.count, 20000u);
  CAF_MESSAGE("failed " << took << " s after the kill");
}

CAF_TEST(a node killed while a blocking execute waits fails it) {
  test::serve_process node;
  auto client = connect(node);
  auto s = session(*client, dir.path);
  auto fifo = dir.at("started");
  CAF_REQUIRE_EQUAL(::mkfifo(fifo.c_str(), 0600), 0);
  steady_clock::time_point killed;
  // The killer waits for the command to open the FIFO: the execute is then
  // waiting for its result.
  std::thread killer{[&] {
    std::ifstream in{fifo};
    std::string line;
    std::getline(in, line);
    killed = steady_clock::now();
    node.stop(SIGKILL);
  }};
  auto r = s.execute("echo go > started; exec sleep 3");
  killer.join();
  auto took = seconds_f{steady_clock::now() - killed}.count();
  CAF_REQUIRE(!r);
  CHECK_UNREACHABLE(r.error(), node.address);
  CAF_MESSAGE("failed " << took << " s after the kill");
  // The facade of the node itself fails too, it does not hang.
  auto listed = client->list();
  CAF_REQUIRE(!listed);
  CHECK_UNREACHABLE(listed.error(), node.address);
}

CAF_TEST(a killed client has its sessions stopped after the grace) {
  test::serve_process node{{"--client-grace", "0.5", "--log-level", "debug"},
                           dir.at("node.log")};
  auto watcher = connect(node);
  // Baseline of the node's descriptors with one client connected.
  auto fds_before = fds_of(node.pid);
  // A detached session made by a CLI that has exited: it stays.
  auto kept = test::spawn_capture(
    {SANDBOX_CLI, "--node", node.address, "--json", "session", "create"});
  CAF_REQUIRE_EQUAL(kept.status, 0);
  // A CLI whose ephemeral session runs two sleeps; it prints their pids.
  test::live_process cli{{SANDBOX_CLI, "--node", node.address, "run",
                          "sleep 300 & echo $!; sleep 300 & echo $!; wait"}};
  CAF_REQUIRE(cli.wait_lines(2));
  auto pids = cli.lines();
  CAF_REQUIRE_EQUAL(pids.size(), 2u);
  std::vector<pid_t> sleeps;
  for (auto& p : pids)
    sleeps.push_back(host_pid(node.pid, static_cast<pid_t>(std::stol(p))));
  for (auto p : sleeps) {
    CAF_REQUIRE_GREATER(p, 0);
    CAF_CHECK(alive(p));
  }
  cli.kill(SIGKILL);
  // After the grace (0.5 s) the node stops the session: both sleeps end.
  CAF_CHECK(eventually([&] { return !alive(sleeps[0]) && !alive(sleeps[1]); },
                       std::chrono::seconds{10}));
  auto sessions = watcher->list();
  SANDBOX_REQUIRE_OK(sessions);
  CAF_REQUIRE_EQUAL(sessions->size(), 1u);
  CAF_CHECK(kept.out.find(sessions->front().id) != std::string::npos);
  CAF_CHECK_EQUAL(sessions->front().children, 0u);
  // Nothing is left: no process of the session, no descriptor of the gone
  // client or of its session's children on the node.
  // (Not above the baseline: the node may since have closed a descriptor
  // that the baseline counted, e.g. the exited `session create` CLI's.)
  // A contained session listens on its leased port from its creation (the
  // forward in, docs/security.md): the kept one holds that socket.
  size_t kept_fds = test::contained_run() ? 1 : 0;
  CAF_CHECK(
    eventually([&] { return fds_of(node.pid) <= fds_before + kept_fds; },
               std::chrono::seconds{5}));
  // The receipt is logged when the stop completes, which may be a moment
  // after the last process ended.
  auto logged = [&](const char* what) {
    return eventually(
      [&] {
        return test::slurp_file(dir.at("node.log")).find(what)
               != std::string::npos;
      },
      std::chrono::seconds{5});
  };
  CAF_CHECK(logged("disconnected"));
  CAF_CHECK(logged("stopping (its client is gone)"));
  CAF_CHECK(logged("] stopped: "));
}

CAF_TEST(garbage and half handshakes do not disturb other clients) {
  test::serve_process node;
  auto client = connect(node);
  auto s = session(*client);
  auto p = s.spawn("cat");
  SANDBOX_REQUIRE_OK(p);
  auto port = port_of(node.address);
  // Garbage: bytes that are no BASP handshake.
  for (int i = 0; i < 3; ++i) {
    int fd = raw_connect(port);
    CAF_REQUIRE(fd >= 0);
    std::string junk(4096, static_cast<char>(0xA5 + i));
    junk.replace(0, 16, "GET / HTTP/1.1\r\n");
    (void) ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    ::close(fd);
  }
  // A handshake cut short: a few header bytes, then the connection drops.
  int half = raw_connect(port);
  CAF_REQUIRE(half >= 0);
  char header[8] = {0, 0, 0, 0, 0, 0, 0, 1};
  (void) ::send(half, header, sizeof(header), MSG_NOSIGNAL);
  ::close(half);
  // A connection that says nothing and stays open.
  int silent = raw_connect(port);
  CAF_REQUIRE(silent >= 0);
  // The running session still works, and so do new clients.
  SANDBOX_REQUIRE_OK(p->write_stdin("still here\n"));
  SANDBOX_REQUIRE_OK(p->close_stdin());
  auto done = p->wait();
  SANDBOX_REQUIRE_OK(done);
  CAF_CHECK_EQUAL(done->stdout_data, "still here\n");
  auto other = connect(node);
  auto s2 = session(*other);
  auto r = s2.execute("echo fine");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "fine\n");
  ::close(silent);
  CAF_CHECK(alive(node.pid));
}

CAF_TEST_FIXTURE_SCOPE_END()
