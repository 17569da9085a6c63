#define CAF_SUITE actors.remote
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The whole protocol over a real loopback connection: a node published by
// one actor system, reached by another one (its own middleman) through
// `remote_node`, exactly as a client in another process would.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "served_node.hpp"

using namespace sandbox;
using namespace sandbox::actors;

using sandbox::test::served_node;

CAF_TEST(node addresses parse with ports and IPv6 brackets) {
  auto a = parse_node_address("127.0.0.1:4800");
  SANDBOX_REQUIRE_OK(a);
  CAF_CHECK_EQUAL(a->host, "127.0.0.1");
  CAF_CHECK_EQUAL(a->port, 4800);
  auto b = parse_node_address("[::1]:9");
  SANDBOX_REQUIRE_OK(b);
  CAF_CHECK_EQUAL(b->host, "::1");
  CAF_CHECK_EQUAL(b->to_string(), "[::1]:9");
  CAF_CHECK(parse_node_address("host.example:65535"));
  for (auto bad : {"", "host", "host:", ":80", "host:0", "host:65536",
                   "host:8x", "::1:80", "[::1]80", "[::1", "a b:1"}) {
    auto r = parse_node_address(bad);
    CAF_CHECK(!r);
    if (!r) {
      CAF_CHECK_EQUAL(r.error().code, errc::invalid_argument);
      CAF_CHECK(r.error().message.find(std::string{"\""} + bad + "\"")
                != std::string::npos);
    }
  }
  CAF_CHECK(parse_node_address("0.0.0.0:0", true));
  CAF_CHECK(is_loopback("127.0.0.1"));
  CAF_CHECK(is_loopback("::1"));
  CAF_CHECK(is_loopback("localhost"));
  CAF_CHECK(!is_loopback("0.0.0.0"));
  CAF_CHECK(!is_loopback("192.168.1.4"));
}

CAF_TEST(sockets a host application accepts keep the kernel numbers) {
  served_node served;
  // A listening socket of the host's own, next to a published node.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CAF_REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  CAF_REQUIRE_EQUAL(
    ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  CAF_REQUIRE_EQUAL(::listen(listener, 1), 0);
  CAF_REQUIRE_EQUAL(
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  CAF_REQUIRE(client >= 0);
  CAF_REQUIRE_EQUAL(
    ::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  // A node's connections move to the upper half of the descriptor limit;
  // the host's accepted socket gets a low number, as the kernel chose it.
  int accepted = ::accept(listener, nullptr, nullptr);
  CAF_REQUIRE(accepted >= 0);
  rlimit lim{};
  CAF_REQUIRE_EQUAL(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  auto upper_half
    = std::max<rlim_t>(64, std::min<rlim_t>(lim.rlim_cur, rlim_t{1} << 20) / 2);
  CAF_CHECK_LESS(static_cast<rlim_t>(accepted), upper_half);
  // Not made close-on-exec either: the host's flags are its own.
  CAF_CHECK_EQUAL(::fcntl(accepted, F_GETFD) & FD_CLOEXEC, 0);
  ::close(accepted);
  ::close(client);
  ::close(listener);
}

CAF_TEST(a node that does not listen is node unreachable naming it) {
  served_node probe;
  auto port = probe.port;
  {
    caf::scoped_actor self{*probe.sys};
    CAF_REQUIRE(probe.sys->middleman().unpublish(probe.node, port));
  }
  auto address = "127.0.0.1:" + std::to_string(port);
  auto c = remote_node::connect(address);
  CAF_REQUIRE(!c);
  CAF_CHECK_EQUAL(c.error().code, errc::node_unreachable);
  CAF_CHECK(c.error().message.find(address) != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE(remote_tests, test::served_fixture)

CAF_TEST(chunks reach a remote sink in order then one result) {
  auto s = session();
  std::string seen;
  size_t chunks = 0;
  // 4 MiB in many chunks: every chunk is acked over the wire.
  auto r = s.execute_streaming("head -c 4194304 /dev/zero | tr '\\0' x; "
                               "echo; echo err >&2",
                               {}, [&](const output_chunk& c) {
                                 ++chunks;
                                 if (c.stream == stream_kind::out)
                                   seen += c.data;
                               });
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  CAF_CHECK_EQUAL(seen.size(), 4194305u);
  CAF_CHECK_EQUAL(seen, std::string(4194304, 'x') + "\n");
  CAF_CHECK(chunks > 2);
  CAF_CHECK_EQUAL(r->stderr_data, "err\n");
}

CAF_TEST(a slow remote reader still gets every byte) {
  auto s = session();
  // The child writes 64 MiB; the reader takes its time with the first
  // chunks, so acks come late: every byte still arrives, once. That the
  // child then waits on its pipe, with a bounded amount held by the node,
  // is pinned by "a stalled remote reader stops the child" below.
  size_t chunks = 0;
  uint64_t bytes = 0;
  auto r = s.execute_streaming(
    "head -c 67108864 /dev/zero", {}, [&](const output_chunk& c) {
      if (++chunks <= 3)
        std::this_thread::sleep_for(std::chrono::milliseconds{50});
      bytes += c.data.size();
    });
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(bytes, 67108864u);
  CAF_CHECK_EQUAL(r->exit_code, 0);
}

CAF_TEST(a remote reader that falls behind gets joined chunks in order) {
  auto s = session();
  // While the first chunk's callback waits, the node joins what the child
  // writes into larger chunks (at most 1 MiB each), in order.
  std::string seen;
  size_t chunks = 0;
  size_t largest = 0;
  auto r = s.execute_streaming("seq 1 400000", {}, [&](const output_chunk& c) {
    if (++chunks == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds{200});
    largest = std::max(largest, c.data.size());
    seen += c.data;
  });
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  std::string expected;
  for (int i = 1; i <= 400000; ++i)
    expected += std::to_string(i) + "\n";
  CAF_CHECK(seen == expected);
  CAF_CHECK_EQUAL(seen.size(), expected.size());
  CAF_CHECK(largest > 65536u);
  CAF_CHECK(largest <= 1048576u);
}

CAF_TEST(a stalled remote reader stops the child within a few MiB) {
  auto s = session();
  // The child writes 64 MiB in 256 KiB blocks and counts them in a file.
  // The reader holds its first chunk until the count stops moving: the node
  // then holds a bounded amount (about 3 MiB) and the child is blocked on
  // its pipe, far from its 256 blocks.
  auto progress = server.dir.path + "/progress";
  auto cmd = "i=0; while [ $i -lt 256 ]; do head -c 262144 /dev/zero; "
             "i=$((i+1)); echo $i > '"
             + progress + "'; done";
  auto count = [&] {
    std::ifstream in{progress};
    int n = 0;
    in >> n;
    return n;
  };
  int stalled_at = -1;
  uint64_t bytes = 0;
  auto r = s.execute_streaming(cmd, {}, [&](const output_chunk& c) {
    if (stalled_at < 0) {
      // Waits until the count stayed the same for 500 ms (10 s at most).
      auto deadline = std::chrono::steady_clock::now()
                      + std::chrono::seconds{10};
      int last = count();
      auto since = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
        auto now = count();
        if (now != last) {
          last = now;
          since = std::chrono::steady_clock::now();
        } else if (std::chrono::steady_clock::now() - since
                   > std::chrono::milliseconds{500}) {
          break;
        }
      }
      stalled_at = last;
    }
    bytes += c.data.size();
  });
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  CAF_CHECK_EQUAL(bytes, uint64_t{64} << 20);
  CAF_MESSAGE("blocks written while the reader stalled: " << stalled_at);
  // 32 blocks = 8 MiB: pipe, reader credit, 2 chunks in flight and 1 MiB
  // queued fit well below it.
  CAF_CHECK(stalled_at >= 0);
  CAF_CHECK(stalled_at < 32);
}

CAF_TEST(errors cross with their codes and messages) {
  auto s = session();
  exec_options opts;
  opts.env["1BAD"] = "x";
  auto r = s.execute("true", opts);
  CAF_REQUIRE(!r);
  CAF_CHECK_EQUAL(r.error().code, errc::invalid_argument);
  CAF_CHECK(r.error().message.find("1BAD") != std::string::npos);
  auto files = files_of(s);
  SANDBOX_REQUIRE_OK(files);
  auto missing = files->read_file("missing.txt");
  CAF_REQUIRE(!missing);
  CAF_CHECK_EQUAL(missing.error().code, errc::path_not_found);
  CAF_CHECK(missing.error().message.find("missing.txt") != std::string::npos);
  auto stopped = client->stop_session("00000000-0000-4000-8000-000000000000");
  CAF_REQUIRE(!stopped);
  CAF_CHECK_EQUAL(stopped.error().code, errc::session_not_found);
}

CAF_TEST(files list frames read streams and streamed writes cross) {
  auto s = session();
  auto files = files_of(s);
  SANDBOX_REQUIRE_OK(files);
  std::string big(3 * 1024 * 1024 + 7, 'a');
  for (size_t i = 0; i < big.size(); i += 4096)
    big[i] = static_cast<char>(i / 4096 % 256);
  auto w = files->open_write("d/big.bin");
  SANDBOX_REQUIRE_OK(w);
  for (size_t i = 0; i < big.size(); i += 1000000)
    SANDBOX_REQUIRE_OK(w->write(big.substr(i, 1000000)));
  SANDBOX_REQUIRE_OK(w->commit());
  std::string back;
  auto total = files->read_stream(
    "d/big.bin",
    [&](const std::string& chunk) {
      back += chunk;
      return true;
    },
    65536);
  SANDBOX_REQUIRE_OK(total);
  CAF_CHECK_EQUAL(*total, big.size());
  CAF_CHECK(back == big);
  for (int i = 0; i < 300; ++i)
    SANDBOX_REQUIRE_OK(
      files->write_file("d/f" + std::to_string(1000 + i), "x"));
  size_t frames = 0;
  auto done = files->list("d", 1, [&](const fs::frame&) {
    ++frames;
    return true;
  });
  CAF_CHECK(!done.error);
  CAF_CHECK_EQUAL(done.count, 301u);
  CAF_CHECK_EQUAL(frames, 301u);
  // A listing that fails still ends with its one done frame, error inside.
  auto bad = files->list("nope", 1, {});
  CAF_REQUIRE(bad.error);
  CAF_CHECK_EQUAL(bad.error->code, errc::path_not_found);
  auto st = files->stat("d/big.bin");
  SANDBOX_REQUIRE_OK(st);
  CAF_CHECK_EQUAL(st->size, big.size());
  auto conflict = files->write_file("d/big.bin", "y", std::string{"stale"});
  CAF_REQUIRE(!conflict);
  CAF_CHECK_EQUAL(conflict.error().code, errc::conflict);
}

CAF_TEST(spawn handles cancel and stop receipts cross) {
  auto s = session();
  auto p = s.spawn("cat");
  SANDBOX_REQUIRE_OK(p);
  CAF_CHECK(p->pid() > 0);
  SANDBOX_REQUIRE_OK(p->write_stdin("hello\n"));
  SANDBOX_REQUIRE_OK(p->close_stdin());
  auto done = p->wait();
  SANDBOX_REQUIRE_OK(done);
  CAF_CHECK_EQUAL(done->stdout_data, "hello\n");
  auto q = s.spawn("sleep 30");
  SANDBOX_REQUIRE_OK(q);
  SANDBOX_REQUIRE_OK(q->kill(SIGKILL));
  auto killed = q->wait();
  SANDBOX_REQUIRE_OK(killed);
  CAF_CHECK_EQUAL(killed->exit_code, 128 + SIGKILL);
  // Cancel from another thread while the call waits.
  std::atomic<bool> started{false};
  std::thread canceller{[&] {
    while (!started)
      std::this_thread::yield();
    auto c = s.cancel("k");
    CAF_CHECK(c && *c);
  }};
  exec_options opts;
  opts.cancel_key = "k";
  auto r = s.execute_streaming("echo go; sleep 30", opts,
                               [&](const output_chunk&) { started = true; });
  canceller.join();
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->reason, exit_reason::cancelled);
  auto bg = s.spawn("sleep 30");
  SANDBOX_REQUIRE_OK(bg);
  auto list = client->list();
  SANDBOX_REQUIRE_OK(list);
  CAF_REQUIRE_EQUAL(list->size(), 1u);
  // The killed `sleep` may still be counted until its actor reported.
  CAF_CHECK_GREATER_OR_EQUAL(list->front().children, 1u);
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_GREATER_OR_EQUAL(receipt->ended, 1u);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
  auto after = s.execute("true");
  CAF_REQUIRE(!after);
  CAF_CHECK_EQUAL(after.error().code, errc::session_stopped);
}

CAF_TEST(a process outlives its client and a second client reads on) {
  std::string expected;
  for (int i = 1; i <= 20000; ++i)
    expected += std::to_string(i) + "\n";
  std::string id;
  std::string got;
  uint64_t offset = 0;
  {
    auto first = server.connect();
    actors::session_config scfg;
    scfg.home_directory = server.dir.path + "/home";
    scfg.detached = true;
    auto s = actors::blocking_session::create(*first, scfg);
    SANDBOX_REQUIRE_OK(s);
    auto info = s->info();
    SANDBOX_REQUIRE_OK(info);
    id = info->id;
    actors::process_options opts;
    opts.open_stdin = true;
    // Prints the numbers once its stdin says so, then waits for the end
    // of its stdin.
    auto p = s->start_process("read go; seq 1 20000; cat", opts);
    SANDBOX_REQUIRE_OK(p);
    SANDBOX_REQUIRE_OK(s->write_process(p->id, "go\n"));
    // Reads a first part, then the client goes away mid-stream.
    auto r = s->read_process(p->id, 0, std::chrono::seconds{10}, 1000);
    SANDBOX_REQUIRE_OK(r);
    for (auto& c : r->chunks)
      got += c.data;
    offset = r->next_offset;
    CAF_REQUIRE(offset > 0);
  }
  auto second = server.connect();
  caf::scoped_actor self{second->system()};
  std::optional<actors::session_actor> found;
  self->request(second->node(), caf::infinite, actors::get_atom_v, id)
    .receive([&](actors::session_actor& h) { found = std::move(h); },
             [&](caf::error& e) { CAF_FAIL("get failed: " << to_string(e)); });
  CAF_REQUIRE(found.has_value());
  actors::blocking_session s{second->system(), *found};
  auto list = s.processes();
  SANDBOX_REQUIRE_OK(list);
  CAF_REQUIRE_EQUAL(list->size(), 1u);
  CAF_CHECK((*list)[0].running);
  auto pid = (*list)[0].id;
  // From the offset the first client reached: nothing lost or repeated.
  while (got.size() < expected.size()) {
    auto r = s.read_process(pid, offset, std::chrono::seconds{10}, 4096);
    SANDBOX_REQUIRE_OK(r);
    CAF_REQUIRE_EQUAL(r->gap, 0u);
    CAF_REQUIRE(r->next_offset > r->offset);
    for (auto& c : r->chunks)
      got += c.data;
    offset = r->next_offset;
  }
  CAF_CHECK_EQUAL(got, expected);
  SANDBOX_REQUIRE_OK(s.close_process_stdin(pid));
  auto done = s.wait_process(pid, std::chrono::seconds{10});
  SANDBOX_REQUIRE_OK(done);
  CAF_CHECK(!done->running);
  CAF_CHECK_EQUAL(done->exit_code, 0);
  SANDBOX_REQUIRE_OK(s.stop());
}

CAF_TEST(code runs with its source streamed over the wire) {
  auto s = session();
  auto r = s.execute_code_streaming("sh", {},
                                    [](blocking_process p) {
                                      (void) p.write_stdin("echo from-stdin\n");
                                      (void) p.close_stdin();
                                    },
                                    {});
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, "from-stdin\n");
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST(a short client grace stops only the attached sessions) {
  node_config ncfg;
  ncfg.client_grace = std::chrono::milliseconds{200};
  served_node server{ncfg};
  auto watcher = remote_node::connect(server.address());
  SANDBOX_REQUIRE_OK(watcher);
  std::string kept_id;
  {
    auto other = remote_node::connect(server.address());
    SANDBOX_REQUIRE_OK(other);
    session_config keep;
    keep.detached = true;
    auto kept = blocking_session::create(**other, keep);
    SANDBOX_REQUIRE_OK(kept);
    auto gone = blocking_session::create(**other, session_config{});
    SANDBOX_REQUIRE_OK(gone);
    auto kept_info = kept->info();
    SANDBOX_REQUIRE_OK(kept_info);
    kept_id = kept_info->id;
  }
  // The other client's actor system is gone. Wait for the event: the node
  // lists only the detached session once the grace ran out.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  size_t left = 0;
  do {
    auto sessions = (*watcher)->list();
    SANDBOX_REQUIRE_OK(sessions);
    left = sessions->size();
    if (left == 1) {
      CAF_CHECK_EQUAL(sessions->front().id, kept_id);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  } while (std::chrono::steady_clock::now() < deadline);
  CAF_CHECK_EQUAL(left, 1u);
}
