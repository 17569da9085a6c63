#define CAF_SUITE actors.remote_door
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The node's door (docs/security.md): what a published node does with a
// connection before the peer has proved anything. A peer that announces a
// huge frame, or that never completes its handshake, is dropped (findings
// A7 and A15 of the reliability review); on loopback without TLS, a peer
// of another user is refused at once (A8); a client that behaves still
// works.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include "helpers/quiet_fork.hpp"
#include "helpers/tls_files.hpp"
#include "remote/remote_door.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/log.hpp"
#include "served_node.hpp"

using namespace sandbox;
using namespace sandbox::actors;
using namespace std::chrono_literals;
using sandbox::test::served_node;

namespace {

/// How long a check waits for the node to close a connection: far longer
/// than it takes; the bound only turns a hang into a failed check.
constexpr auto close_bound = 30s;

/// The frame of the reproduction: a 32-byte BASP header (operation `op`,
/// payload_len `len`, operation data 3, both actor ids 0) and 16 bytes.
std::string frame(uint8_t op, uint32_t len) {
  std::string out(32, '\0');
  out[0] = static_cast<char>(op);
  for (int i = 0; i < 4; ++i)
    out[4 + i] = static_cast<char>((len >> (24 - 8 * i)) & 0xff);
  out[15] = 3;
  return out + std::string(16, 'x');
}

/// Keeps the warnings the library logs while it lives (the library's
/// logger is replaced by one of its own, and dropped again after).
class captured_log {
public:
  captured_log() : sink_(std::make_shared<line_sink>()) {
    spdlog::drop(log::logger_name);
    auto mine = std::make_shared<spdlog::logger>(log::logger_name, sink_);
    mine->set_level(spdlog::level::warn);
    spdlog::register_logger(mine);
  }

  ~captured_log() {
    spdlog::drop(log::logger_name);
  }

  bool has(const std::string& part) const {
    auto text = sink_->text();
    if (text.find(part) != std::string::npos)
      return true;
    CAF_MESSAGE("the log does not hold '" << part << "':\n" << text);
    return false;
  }

private:
  class line_sink : public spdlog::sinks::base_sink<std::mutex> {
  public:
    std::string text() {
      std::lock_guard<std::mutex> guard{mutex_};
      return text_;
    }

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
      text_.append(msg.payload.data(), msg.payload.size());
      text_ += '\n';
    }

    void flush_() override {
    }

  private:
    std::string text_;
  };

  std::shared_ptr<line_sink> sink_;
};

/// A TCP connection to `port` on loopback.
int connect_raw(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CAF_REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  CAF_REQUIRE_EQUAL(
    ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

/// "127.0.0.1:PORT", the local end of `fd`: how the node names this peer.
std::string local_name(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  CAF_REQUIRE_EQUAL(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len),
                    0);
  return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

void send_all(int fd, const std::string& data) {
  CAF_REQUIRE_EQUAL(::send(fd, data.data(), data.size(), MSG_NOSIGNAL),
                    static_cast<ssize_t>(data.size()));
}

/// Reads (and discards) what the node sends until it closes the
/// connection: true once it did (end of file or reset), false when it is
/// still open after `close_bound`.
bool closed_by_node(int fd) {
  auto deadline = std::chrono::steady_clock::now() + close_bound;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      return false;
    auto n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET))
      return true;
    if (n < 0 && errno != EINTR && errno != EAGAIN)
      return false;
  }
}

/// Connects to `served` and sends nothing: checks that the node drops the
/// connection at its handshake deadline of 200 ms, counts it, and names the
/// peer in its warning.
void check_silent_peer_dropped(const served_node& served,
                               const captured_log& logged) {
  auto before = actors::detail::door_counters();
  int fd = connect_raw(served.port);
  auto peer = local_name(fd);
  CAF_CHECK(closed_by_node(fd));
  ::close(fd);
  CAF_CHECK_EQUAL(actors::detail::door_counters().late_handshakes
                    - before.late_handshakes,
                  1u);
  CAF_CHECK(logged.has("dropped the connection of " + peer
                       + ": no handshake within 200 ms"));
}

/// The peak resident size of this process (VmHWM), in bytes; 0 when
/// unknown. `reset_peak` starts a new peak at the current size.
uint64_t peak_resident() {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stoull(line.substr(6)) * 1024;
  return 0;
}

void reset_peak() {
  std::ofstream{"/proc/self/clear_refs"} << "5";
}

constexpr uint32_t one_gib = 1u << 30;

/// An unused uid (nobody's) for the peers of another user.
constexpr uid_t other_uid = 65534;

/// What a peer of another user saw of the node (the exit code of the child
/// process that was that peer).
enum peer_saw : int {
  /// The node closed the connection without sending a byte.
  closed_unread = 10,
  /// The node spoke (its handshake): the connection was admitted.
  node_spoke = 11,
  /// Connecting or reading failed otherwise, or nothing came in time.
  peer_failed = 12,
  /// The child could not take the uid (not root).
  cannot_setuid = 13,
};

/// Connects to loopback `port` from a child process that took the uid (and
/// gid) `uid` first, so that the kernel records its socket as that user's;
/// the child reads one byte and says what it saw (`peer_saw`). The child
/// makes system calls only (it is forked from a threaded process).
int connect_as(uid_t uid, uint16_t port) {
  auto pid = test::quiet_fork();
  CAF_REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::syscall(SYS_setresgid, uid, uid, uid) != 0
        || ::syscall(SYS_setresuid, uid, uid, uid) != 0)
      ::_exit(cannot_setuid);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (fd < 0
        || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      ::_exit(peer_failed);
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(close_bound.count()) * 1000) != 1)
      ::_exit(peer_failed);
    char c;
    auto n = ::recv(fd, &c, 1, 0);
    if (n > 0)
      ::_exit(node_spoke);
    ::_exit(n == 0 || errno == ECONNRESET ? closed_unread : peer_failed);
  }
  int status = 0;
  CAF_REQUIRE_EQUAL(::waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Whether this process may make peers of another user; says why not.
bool can_switch_uid() {
  if (::geteuid() == 0)
    return true;
  CAF_MESSAGE("skipped: a peer of another uid needs root to setuid");
  return false;
}

} // namespace

CAF_TEST(door settings are validated naming the bad value) {
  SANDBOX_CHECK_OK(validate(door_config{}));
  door_config small;
  small.max_frame_bytes = 1024;
  auto r = validate(small);
  CAF_REQUIRE(!r);
  CAF_CHECK_EQUAL(r.error().code, errc::invalid_argument);
  CAF_CHECK(r.error().message.find("max_frame_bytes 1024")
            != std::string::npos);
  door_config negative;
  negative.handshake_timeout = -1ms;
  CAF_CHECK(!validate(negative));
  // publish_node refuses them too, before it listens.
  test::temp_dir dir;
  system_config cfg;
  configure_remote(cfg, {});
  caf::actor_system sys{cfg};
  auto rt = make_runtime(test::node_fixture::config());
  node_config ncfg;
  ncfg.base_directory = dir.path + "/sessions";
  auto node = spawn_node(sys, rt, ncfg);
  auto p = publish_node(sys, node, "127.0.0.1", 0, false, small);
  CAF_CHECK(!p);
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
  node = nullptr;
  sys.await_all_actors_done();
  close_actor_gate(*rt);
}

CAF_TEST(a frame above the maximum drops the connection before its buffer) {
  captured_log logged;
  served_node served;
  auto before = actors::detail::door_counters();
  reset_peak();
  auto peak_before = peak_resident();
  // The reproduction of A7: each header claims 1 GiB, as a client's
  // handshake, a direct message and a server's handshake.
  std::vector<std::string> peers;
  for (uint8_t op : {1, 2, 0}) {
    int fd = connect_raw(served.port);
    peers.push_back(local_name(fd));
    send_all(fd, frame(op, one_gib));
    CAF_CHECK(closed_by_node(fd));
    ::close(fd);
  }
  auto after = actors::detail::door_counters();
  CAF_CHECK_EQUAL(after.oversized_frames - before.oversized_frames, 3u);
  // Nothing near the claimed size was ever resident (the buffer would be
  // zeroed, hence resident, at once).
  auto peak_after = peak_resident();
  CAF_MESSAGE("peak resident " << peak_before << " -> " << peak_after);
  SANDBOX_CHECK_MEMORY_BOUND(peak_after, peak_before + one_gib / 4);
  // The warning names each peer and the size it announced.
  for (auto& peer : peers)
    CAF_CHECK(logged.has("dropped the connection of " + peer
                         + ": it announced a frame of 1073741824 bytes"));
  // The door stays open to a client that behaves.
  CAF_CHECK_EQUAL(served.echo_through_client(), "hello\n");
}

CAF_TEST(a frame at the maximum is read) {
  // The limit itself passes the door: the node reads the frame (CAF then
  // finds no handshake in it and drops the connection itself, without a
  // warning of the door).
  door_config door;
  door.max_frame_bytes = min_frame_bytes;
  served_node served{{}, {}, door};
  auto before = actors::detail::door_counters();
  int fd = connect_raw(served.port);
  send_all(fd, frame(1, min_frame_bytes) + std::string(min_frame_bytes, 'y'));
  CAF_CHECK(closed_by_node(fd));
  ::close(fd);
  CAF_CHECK_EQUAL(actors::detail::door_counters().oversized_frames,
                  before.oversized_frames);
  CAF_CHECK_EQUAL(served.echo_through_client(), "hello\n");
}

CAF_TEST(a connection that never speaks is dropped at its handshake deadline) {
  captured_log logged;
  door_config door;
  door.handshake_timeout = 200ms;
  served_node served{{}, {}, door};
  // A client that connected before the silent peer: its handshake is done,
  // so the deadline does not apply to it.
  auto client = served.connect();
  check_silent_peer_dropped(served, logged);
  // The client's connection, older than the silent one, is still there.
  auto s = served.open_session(*client);
  auto r = s.execute("echo still");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "still\n");
}

CAF_TEST(a TLS node drops a connection that never starts TLS) {
  test::tls_files files;
  captured_log logged;
  door_config door;
  door.handshake_timeout = 200ms;
  served_node served{{}, {files.node_cert, files.node_key, files.ca}, door};
  check_silent_peer_dropped(served, logged);
}

CAF_TEST(a TLS node drops a client whose first frame is above the maximum) {
  test::tls_files files;
  captured_log logged;
  served_node served{{}, {files.node_cert, files.node_key, files.ca}};
  auto before = actors::detail::door_counters();
  // A client with a certificate of the CA: the door is the node's check
  // of what comes after TLS.
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{
    SSL_CTX_new(TLS_client_method()), SSL_CTX_free};
  CAF_REQUIRE(ctx != nullptr);
  CAF_REQUIRE_EQUAL(
    SSL_CTX_use_certificate_chain_file(ctx.get(), files.client_cert.c_str()),
    1);
  CAF_REQUIRE_EQUAL(SSL_CTX_use_PrivateKey_file(
                      ctx.get(), files.client_key.c_str(), SSL_FILETYPE_PEM),
                    1);
  CAF_REQUIRE_EQUAL(
    SSL_CTX_load_verify_locations(ctx.get(), files.ca.c_str(), nullptr), 1);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  int fd = connect_raw(served.port);
  auto peer = local_name(fd);
  // The bound of every blocking read below.
  timeval tv{static_cast<time_t>(close_bound.count()), 0};
  CAF_REQUIRE_EQUAL(::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)),
                    0);
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl{SSL_new(ctx.get()), SSL_free};
  SSL_set_fd(ssl.get(), fd);
  CAF_REQUIRE_EQUAL(SSL_connect(ssl.get()), 1);
  auto data = frame(1, one_gib);
  CAF_REQUIRE_EQUAL(SSL_write(ssl.get(), data.data(),
                              static_cast<int>(data.size())),
                    static_cast<int>(data.size()));
  // Reads (the node's handshake) until the node closes; a read that timed
  // out means it did not.
  char buf[4096];
  int n;
  while ((n = SSL_read(ssl.get(), buf, sizeof(buf))) > 0) {
  }
  CAF_CHECK_NOT_EQUAL(SSL_get_error(ssl.get(), n), SSL_ERROR_WANT_READ);
  ssl.reset();
  ::close(fd);
  CAF_CHECK_EQUAL(actors::detail::door_counters().oversized_frames
                    - before.oversized_frames,
                  1u);
  CAF_CHECK(logged.has("dropped the connection of " + peer
                       + ": it announced a frame of 1073741824 bytes"));
  // A client that behaves still gets in.
  CAF_CHECK_EQUAL(
    served.echo_through_client({files.client_cert, files.client_key, files.ca}),
    "hello\n");
}

CAF_TEST(a loopback node refuses a peer of another uid before reading a byte) {
  if (!can_switch_uid())
    return;
  captured_log logged;
  served_node served;
  auto before = actors::detail::door_counters();
  auto saw = connect_as(other_uid, served.port);
  if (saw == cannot_setuid) {
    CAF_MESSAGE("skipped: setresuid(" << other_uid << ") failed");
    return;
  }
  // Closed at accept: the node sent nothing, not even its handshake.
  CAF_CHECK_EQUAL(saw, closed_unread);
  CAF_CHECK_EQUAL(
    actors::detail::door_counters().foreign_uids - before.foreign_uids, 1u);
  CAF_CHECK(logged.has("uid " + std::to_string(other_uid)
                       + " is neither the node's user ("
                       + std::to_string(::geteuid()) + ")"));
  // The node's own user still gets in, with no flag.
  CAF_CHECK_EQUAL(served.echo_through_client(), "hello\n");
}

CAF_TEST(a loopback node admits the uids it allows) {
  if (!can_switch_uid())
    return;
  door_config door;
  door.allowed_uids = {other_uid};
  served_node served{{}, {}, door};
  auto before = actors::detail::door_counters();
  auto saw = connect_as(other_uid, served.port);
  if (saw == cannot_setuid) {
    CAF_MESSAGE("skipped: setresuid(" << other_uid << ") failed");
    return;
  }
  // The node answered with its handshake.
  CAF_CHECK_EQUAL(saw, node_spoke);
  CAF_CHECK_EQUAL(actors::detail::door_counters().foreign_uids,
                  before.foreign_uids);
  CAF_CHECK_EQUAL(served.echo_through_client(), "hello\n");
}
