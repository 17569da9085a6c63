// A host program that embeds a node, for the suites that need the node to
// be a process of its own (it dies, or it has expectations of its own).
//
//   sandbox-test-node-host die DIR [OPTION...]
//       puts itself in a process group of its own, embeds a node, runs
//       `sleep 300 & sleep 300` in two sessions (working directories under
//       DIR), prints `mode cgroup|process_group`, `watchdog PID`, `session
//       ID` twice, `pid PID` for every process of both executions once the
//       two sleeps of each run, then `ready`, and waits to be killed. In
//       the cgroup mode also `cgroup DIR`, the process's cgroup directory.
//       Options: `reap-all` (the node is configured as the CLI's),
//       `process-group` (the fallback mode is forced), `escape` (the
//       background sleep leaves the group: `setsid sleep 300 & sleep 300`).
//   sandbox-test-node-host cgroups KEEP FORGET
//       takes a watchdog lease, watches the directories KEEP and FORGET as
//       cgroups, forgets FORGET again, prints `watchdog PID` and `ready`,
//       and waits to be killed (no cgroup v2 needed: the watchdog only
//       writes to `<dir>/cgroup.kill`).
//   sandbox-test-node-host host DIR [process-group]
//       an application with children, a SIGCHLD handler and SIGPIPE
//       expectations of its own embeds a node; prints `ok NAME` or
//       `FAIL NAME: WHY` per check and exits 1 if one failed.
//   sandbox-test-node-host net DIR
//       an application with sockets and OpenSSL contexts of its own embeds
//       a node and publishes one over TLS (it links sandbox::actors, not
//       sandbox::publish); prints `ok NAME` or `FAIL NAME: WHY` per check.
//
// Its nodes take the isolation of SANDBOX_TEST_ISOLATION as their default
// (test_isolation.hpp), as the suites' own nodes do.

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <openssl/ssl.h>

#include "helpers/tls_files.hpp"
#include "runtime.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/process/process_tree.hpp"
#include "sandbox/process/watchdog.hpp"
#include "test_isolation.hpp"

namespace {

using namespace sandbox;
using namespace sandbox::actors;

std::string comm(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/comm"};
  std::string name;
  std::getline(in, name);
  return name;
}

/// Live processes of execution `pgid` (its group, and whatever carries
/// the session's marker `prefix`), and how many of them run `sleep`.
std::vector<pid_t> members(pid_t pgid, const std::string& prefix, int& sleeps) {
  tree_query q;
  q.groups = {pgid};
  q.marker_prefix = prefix;
  auto out = find_members(q);
  sleeps = 0;
  for (auto pid : out)
    sleeps += comm(pid) == "sleep";
  return out;
}

/// Forces the process-group mode on `cfg`. Its contained sessions then get
/// no memory or process limit (0): those need the cgroup mode, and a
/// contained session that would get them is refused there
/// (docs/security.md, "Limits").
void force_process_group(runtime_config& cfg) {
  cfg.containment = containment_choice::process_group;
  cfg.limits.memory = 0;
  cfg.limits.processes = 0;
}

int die_mode(const std::string& dir, bool reap_all, bool process_group,
             bool escape) {
  ::setpgid(0, 0);
  // As a CLI: Ctrl-C ends it (a shell's background job would ignore it).
  ::signal(SIGINT, SIG_DFL);
  runtime_config cfg;
  cfg.isolation = sandbox::test::suite_isolation();
  cfg.reap_all_orphans = reap_all;
  if (process_group)
    force_process_group(cfg);
  embedded_node node{cfg};
  std::printf("mode %s\n",
              std::string{to_string(node.rt()->containment())}.c_str());
  if (auto* tree = node.rt()->cgroups())
    std::printf("cgroup %s\n", tree->process_root().c_str());
  std::vector<blocking_session> sessions;
  std::vector<blocking_process> procs;
  std::vector<std::string> markers;
  for (int i = 0; i < 2; ++i) {
    session_config sc;
    sc.working_directory = dir + "/s" + std::to_string(i);
    auto s = blocking_session::create(node, sc);
    if (!s) {
      std::fprintf(stderr, "session: %s\n", s.error().message.c_str());
      return 1;
    }
    auto p = s->spawn(escape ? "setsid sleep 300 & sleep 300"
                             : "sleep 300 & sleep 300");
    if (!p) {
      std::fprintf(stderr, "spawn: %s\n", p.error().message.c_str());
      return 1;
    }
    auto id = s->info()->id;
    std::printf("session %s\n", id.c_str());
    markers.push_back(std::string{marker_variable} + "=" + id + "/");
    sessions.push_back(std::move(*s));
    procs.push_back(std::move(*p));
  }
  std::printf("watchdog %d\n", static_cast<int>(watchdog::pid()));
  // Readiness: both sleeps of each execution run (the shell forks them
  // after the spawn has answered).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  for (size_t i = 0; i < procs.size(); ++i) {
    auto& p = procs[i];
    for (;;) {
      int sleeps = 0;
      auto pids = members(p.pid(), markers[i], sleeps);
      if (sleeps >= 2) {
        for (auto pid : pids)
          std::printf("pid %d\n", static_cast<int>(pid));
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "the sleeps of %d did not start\n", p.pid());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
    }
  }
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;)
    ::pause();
}

int cgroups_mode(const std::string& keep, const std::string& forget) {
  watchdog::lease lease;
  watchdog::watch_cgroup(keep);
  watchdog::watch_cgroup(forget);
  watchdog::forget_cgroup(forget);
  std::printf("watchdog %d\nready\n", static_cast<int>(watchdog::pid()));
  std::fflush(stdout);
  for (;;)
    ::pause();
}

// --- host mode ---------------------------------------------------------------

std::atomic<int> chld_seen{0};
extern "C" void on_chld(int) {
  ++chld_seen;
}

int failures = 0;
void check(const char* name, bool ok, const std::string& why = {}) {
  if (ok) {
    std::printf("ok %s\n", name);
  } else {
    ++failures;
    std::printf("FAIL %s: %s\n", name, why.c_str());
  }
  std::fflush(stdout);
}

struct host_state {
  struct sigaction pipe_act;
  struct sigaction chld_act;
  sigset_t mask;
  int subreaper = 0;
};

host_state snapshot() {
  host_state s;
  ::sigaction(SIGPIPE, nullptr, &s.pipe_act);
  ::sigaction(SIGCHLD, nullptr, &s.chld_act);
  pthread_sigmask(SIG_SETMASK, nullptr, &s.mask);
  ::prctl(PR_GET_CHILD_SUBREAPER, &s.subreaper);
  return s;
}

void check_unchanged(const char* when, const host_state& s) {
  std::string at = when;
  check(("sigpipe-default-" + at).c_str(), s.pipe_act.sa_handler == SIG_DFL);
  check(("sigchld-handler-kept-" + at).c_str(),
        s.chld_act.sa_handler == on_chld
          && (s.chld_act.sa_flags & SA_RESTART) != 0);
  check(("mask-kept-" + at).c_str(), sigismember(&s.mask, SIGCHLD) == 1
                                       && sigismember(&s.mask, SIGPIPE) == 0);
  check(("no-subreaper-" + at).c_str(), s.subreaper == 0,
        "PR_GET_CHILD_SUBREAPER = " + std::to_string(s.subreaper));
}

pid_t ppid_of(pid_t pid) {
  for (auto& e : proc_snapshot())
    if (e.pid == pid)
      return e.ppid;
  return -1;
}

int host_mode(const std::string& dir, bool process_group) {
  // The host's own expectations: SIGPIPE kills it (the default), SIGCHLD
  // has its handler (with SA_RESTART) and is taken by one thread only (the
  // waiter below); every other thread, the node's included (they inherit
  // the mask), blocks it.
  ::signal(SIGPIPE, SIG_DFL);
  struct sigaction act;
  std::memset(&act, 0, sizeof(act));
  act.sa_handler = on_chld;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  ::sigaction(SIGCHLD, &act, nullptr);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &chld, nullptr);

  // A child of the host's own, which exits with 42 once its pipe closes.
  int gate[2];
  if (::pipe(gate) != 0)
    return 2;
  pid_t own = ::fork();
  if (own == 0) {
    ::close(gate[1]);
    char c;
    while (::read(gate[0], &c, 1) > 0) {
    }
    ::_exit(42);
  }
  ::close(gate[0]);

  pid_t watchdog_pid = 0;
  {
    runtime_config cfg;
    cfg.isolation = sandbox::test::suite_isolation();
    if (process_group)
      force_process_group(cfg);
    embedded_node node{cfg};
    std::printf("mode %s\n",
                std::string{to_string(node.rt()->containment())}.c_str());
    check_unchanged("with-node", snapshot());
    watchdog_pid = watchdog::pid();
    check("watchdog-runs", watchdog_pid > 0 && ::kill(watchdog_pid, 0) == 0);
    check("watchdog-not-a-child", ppid_of(watchdog_pid) != ::getpid());

    // The waiter: a blocking waitpid, not retried on EINTR.
    pid_t got = 0;
    int err = 0;
    int status = 0;
    std::thread waiter{[&] {
      pthread_sigmask(SIG_UNBLOCK, &chld, nullptr);
      got = ::waitpid(own, &status, 0);
      err = errno;
    }};

    session_config sc;
    sc.working_directory = dir + "/work";
    auto s = blocking_session::create(node, sc);
    check("session", s.has_value(), s ? "" : s.error().message);
    if (s) {
      // Children of the node end while the waiter blocks: each one's
      // SIGCHLD reaches the waiter's thread.
      for (int i = 0; i < 20; ++i) {
        auto r = s->execute("true");
        if (!r || r->exit_code != 0) {
          check("executions", false, r ? "exit code" : r.error().message);
          break;
        }
      }
      // An orphan of the host's own subprocess (not of the node) must not
      // be re-parented to the host.
      FILE* sh = ::popen("sleep 30 & echo $!", "r");
      int orphan = 0;
      if (sh != nullptr && std::fscanf(sh, "%d", &orphan) == 1) {
        ::pclose(sh);
        auto parent = ppid_of(orphan);
        check("orphans-not-ours", parent != ::getpid(),
              "the orphan " + std::to_string(orphan)
                + " was re-parented to the host");
        ::kill(orphan, SIGKILL);
      } else {
        check("orphans-not-ours", false, "popen failed");
      }
    }
    ::close(gate[1]); // the host's child exits now
    waiter.join();
    check("waitpid-no-eintr", !(got < 0 && err == EINTR),
          "waitpid failed with EINTR");
    check("own-status-kept",
          got == own && WIFEXITED(status) && WEXITSTATUS(status) == 42,
          "waitpid returned " + std::to_string(got) + ": "
            + std::strerror(err));
    check("own-handler-runs", chld_seen.load() > 0,
          "the host's SIGCHLD handler never ran");
  }
  check_unchanged("after-node", snapshot());
  // The watchdog exits after "bye" (not a child: watch it through a pidfd).
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, watchdog_pid, 0));
  bool gone = pidfd < 0 && errno == ESRCH;
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    gone = ::poll(&p, 1, 10000) == 1;
    ::close(pidfd);
  }
  check("watchdog-exits", gone);
  int zombies = 0;
  for (auto& e : proc_snapshot())
    zombies += e.ppid == ::getpid() && e.zombie();
  check("no-zombies", zombies == 0, std::to_string(zombies) + " zombies");
  return failures == 0 ? 0 : 1;
}

// --- net mode ----------------------------------------------------------------

/// A listening socket of the host's own on `addr`:`port` (0: any), its
/// port, and one connection accepted on it with the process's accept().
struct accepted_on {
  int fd = -1;
  int expected = -1; // the lowest free number just before accept()
  bool cloexec = false;
  std::string error;
};

accepted_on accept_one(const char* addr_text, uint16_t port) {
  accepted_on out;
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, addr_text, &addr.sin_addr);
  socklen_t len = sizeof(addr);
  if (listener < 0
      || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0
      || ::listen(listener, 1) != 0
      || ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len)
           != 0) {
    out.error = std::string{"listen on "} + addr_text + ": "
                + std::strerror(errno);
    return out;
  }
  int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr))
      != 0) {
    out.error = std::string{"connect: "} + std::strerror(errno);
    return out;
  }
  // The kernel gives the lowest free number: the one this probe got.
  out.expected = ::open("/dev/null", O_RDONLY);
  ::close(out.expected);
  out.fd = ::accept(listener, nullptr, nullptr);
  if (out.fd < 0)
    out.error = std::string{"accept: "} + std::strerror(errno);
  else
    out.cloexec = (::fcntl(out.fd, F_GETFD) & FD_CLOEXEC) != 0;
  ::close(client);
  ::close(listener);
  return out;
}

/// The names of the TLS 1.3 suites of `ctx`, in its order of preference.
std::string tls13_suites(SSL_CTX* ctx) {
  std::string out;
  auto ciphers = SSL_CTX_get_ciphers(ctx);
  for (int i = 0; i < sk_SSL_CIPHER_num(ciphers); ++i) {
    auto c = sk_SSL_CIPHER_value(ciphers, i);
    if (std::strcmp(SSL_CIPHER_get_version(c), "TLSv1.3") == 0)
      out += std::string{out.empty() ? "" : ":"} + SSL_CIPHER_get_name(c);
  }
  return out;
}

/// A context the host makes itself: whether OpenSSL's defaults survived.
struct own_context {
  bool info_callback_null = false;
  std::string suites;
};

own_context make_own_context() {
  own_context out;
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (ctx == nullptr)
    return out;
  out.info_callback_null = SSL_CTX_get_info_callback(ctx) == nullptr;
  out.suites = tls13_suites(ctx);
  SSL_CTX_free(ctx);
  return out;
}

int net_mode(const std::string& dir) {
  ::signal(SIGPIPE, SIG_DFL);
  // OpenSSL's defaults, before any node exists.
  auto baseline = make_own_context();
  // The program's accept() is libc's: no library linked here defines one.
  Dl_info info{};
  bool found = ::dladdr(reinterpret_cast<void*>(&::accept), &info) != 0
               && info.dli_fname != nullptr;
  std::string where = found ? info.dli_fname : "nowhere";
  // A sanitizer build's runtime intercepts accept() in the program itself
  // and forwards it to libc's: not a definition of the libraries either.
  void* interceptor = ::dlsym(RTLD_DEFAULT, "__interceptor_accept");
  bool sanitizer = interceptor != nullptr
                   && interceptor == reinterpret_cast<void*>(&::accept);
  check("accept-is-libc",
        where.find("libc.so") != std::string::npos || sanitizer,
        "accept() is defined in " + where);

  sandbox::test::tls_files files;
  runtime_config rcfg;
  rcfg.isolation = sandbox::test::suite_isolation();
  embedded_node embedded{rcfg};
  // A node published over TLS, and a client of it: CAF makes its OpenSSL
  // contexts (the node's on its multiplexer thread, the client's on its
  // middleman actor's thread) and the library observes them.
  tls_config node_tls{files.node_cert, files.node_key, files.ca};
  system_config cfg;
  configure_remote(cfg, node_tls);
  auto sys = std::make_unique<caf::actor_system>(cfg);
  auto rt = make_runtime(rcfg);
  node_config ncfg;
  ncfg.base_directory = dir + "/sessions";
  auto node = spawn_node(*sys, rt, ncfg);
  auto port = publish_node(*sys, node, "127.0.0.1", 0, true);
  check("published", port.has_value(), port ? "" : port.error().message);
  if (port) {
    tls_config client_tls{files.client_cert, files.client_key, files.ca};
    auto address = "127.0.0.1:" + std::to_string(*port);
    auto client = remote_node::connect(address, client_tls);
    check("tls-client-connects", client.has_value(),
          client ? "" : client.error().message);
    if (client) {
      auto s = blocking_session::create(**client, {});
      check("tls-session", s.has_value(), s ? "" : s.error().message);
      if (s)
        (void) s->stop();
    }
    // The host's own listener on the node's port number, on another
    // loopback address, and one on a port of its own: both give what the
    // kernel gives (the lowest free number, without close-on-exec).
    for (auto [name, addr, p] :
         {std::tuple{"own-accept-same-port", "127.0.0.2", *port},
          std::tuple{"own-accept", "127.0.0.1", uint16_t{0}}}) {
      auto got = accept_one(addr, p);
      check(name, got.error.empty() && got.fd == got.expected && !got.cloexec,
            got.error.empty() ? "accept gave " + std::to_string(got.fd)
                                  + " (cloexec " + std::to_string(got.cloexec)
                                  + "), the kernel's lowest free number was "
                                  + std::to_string(got.expected)
                              : got.error);
      if (got.fd >= 0)
        ::close(got.fd);
    }
  }
  // The host's own contexts, on its main thread and on a thread of its own.
  auto own = make_own_context();
  own_context other;
  std::thread{[&] { other = make_own_context(); }}.join();
  for (auto [name, got] : {std::pair{"own-ssl-ctx", &own},
                           std::pair{"own-ssl-ctx-thread", &other}}) {
    check(name, got->info_callback_null && got->suites == baseline.suites,
          std::string{"info callback "}
            + (got->info_callback_null ? "null" : "set") + ", TLS 1.3 suites "
            + got->suites + " (OpenSSL's: " + baseline.suites + ")");
  }
  // A context made on a thread of the node's actor system is observed: the
  // scoping is by thread, and CAF's threads are still covered.
  {
    caf::scoped_actor self{*sys};
    auto probe = sys->spawn([]() -> caf::behavior {
      return {[](int) { return make_own_context().info_callback_null; }};
    });
    bool null_there = true;
    self->request(probe, caf::infinite, 1)
      .receive([&](bool x) { null_there = x; }, [](caf::error&) {});
    check("caf-thread-ssl-ctx-observed", !null_there,
          "a context made by an actor of the node's system has no info "
          "callback");
    self->send_exit(probe, caf::exit_reason::user_shutdown);
    self->request(node, caf::infinite, stop_atom_v)
      .receive([](uint32_t) {}, [](caf::error&) {});
    self->send_exit(node, caf::exit_reason::user_shutdown);
    self->wait_for(node);
  }
  node = nullptr;
  sys.reset();
  return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  auto has = [&](const char* option) {
    for (int i = 3; i < argc; ++i)
      if (std::string{argv[i]} == option)
        return true;
    return false;
  };
  if (argc >= 3 && std::string{argv[1]} == "die")
    return die_mode(argv[2], has("reap-all"), has("process-group"),
                    has("escape"));
  if (argc == 4 && std::string{argv[1]} == "cgroups")
    return cgroups_mode(argv[2], argv[3]);
  if (argc >= 3 && std::string{argv[1]} == "host")
    return host_mode(argv[2], has("process-group"));
  if (argc == 3 && std::string{argv[1]} == "net")
    return net_mode(argv[2]);
  std::fprintf(stderr,
               "usage: %s die DIR [reap-all] [process-group] [escape] | "
               "cgroups KEEP FORGET | host DIR [process-group] | net DIR\n",
               argv[0]);
  return 2;
}
