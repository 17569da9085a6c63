// Scenario 13: long-lived processes (docs/processes.md). The first byte
// of an attach over loopback, against the round trip of a session `info`
// on the same connection; and the memory an idle process costs the node
// beyond the output it keeps.

#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench.hpp"
#include "loopback_node.hpp"

namespace sandbox::bench {

namespace {

using namespace std::chrono_literals;

std::string address_of(const loopback_node& n) {
  return fmt::format("127.0.0.1:{}", n.port);
}

/// The id of a session's process that has printed its output and then
/// sleeps.
std::string printed_process(actors::blocking_session& s,
                            const std::string& command, uint64_t bytes) {
  auto p = s.start_process(command);
  if (!p)
    throw std::runtime_error("cannot start a process: " + p.error().message);
  for (;;) {
    auto info = s.wait_process(p->id, 0ms);
    if (!info)
      throw std::runtime_error(info.error().message);
    if (info->next_offset >= bytes)
      return p->id;
    // Waits for the next byte (not a sleep): the read answers when it
    // comes.
    (void) s.read_process(p->id, info->next_offset, 10s, 1);
  }
}

std::vector<row> attach_rows(const options& opt) {
  loopback_node server{opt, {}};
  auto address = address_of(server);
  auto client = actors::remote_node::connect(address);
  if (!client)
    throw std::runtime_error(client.error().message);
  auto s = make_session(**client, opt, "processes/attach");
  auto info = s.info();
  if (!info)
    throw std::runtime_error(info.error().message);
  auto id = printed_process(s, "seq 1 1000; exec sleep 600", 3893);
  size_t n = opt.quick ? 20 : 200;
  std::vector<double> connected;
  std::vector<double> fresh;
  std::vector<double> rtt;
  for (size_t i = 0; i < n; ++i) {
    auto t0 = clock::now();
    if (!s.info())
      throw std::runtime_error("info failed");
    auto t1 = clock::now();
    auto r = s.read_process(id, 0, 0ms, 65536);
    auto t2 = clock::now();
    if (!r || r->chunks.empty())
      throw std::runtime_error("attach read nothing");
    rtt.push_back(ms_between(t0, t1));
    connected.push_back(ms_between(t1, t2));
    // A client that comes back: a connection of its own, the session
    // found by its id, then the read.
    auto t3 = clock::now();
    auto again = actors::remote_node::connect(address);
    if (!again)
      throw std::runtime_error(again.error().message);
    caf::scoped_actor self{(*again)->system()};
    std::optional<actors::session_actor> found;
    self->request((*again)->node(), caf::infinite, actors::get_atom_v, info->id)
      .receive([&](actors::session_actor& h) { found = std::move(h); },
               [](caf::error&) {});
    if (!found)
      throw std::runtime_error("the session was not found by its id");
    actors::blocking_session back{(*again)->system(), *found};
    auto r2 = back.read_process(id, 0, 0ms, 65536);
    auto t4 = clock::now();
    if (!r2 || r2->chunks.empty())
      throw std::runtime_error("reattach read nothing");
    fresh.push_back(ms_between(t3, t4));
  }
  (void) s.stop();
  auto p50 = percentile(connected, 0.5);
  auto fresh50 = percentile(fresh, 0.5);
  auto rtt50 = percentile(rtt, 0.5);
  std::vector<row> rows;
  row a;
  a.scenario = 13;
  a.key = "attach_first_byte";
  a.label = "first byte of an attach over loopback, connected client (p50)";
  a.unit = "ms";
  a.ours = p50;
  a.baseline = rtt50;
  a.goal = "<= 5 ms p50";
  a.result = judge(p50 <= 5.0);
  a.note = fmt::format("{} attaches; baseline: a session info round trip; "
                       "p99 {:.2f} ms",
                       n, percentile(connected, 0.99));
  rows.push_back(a);
  row b;
  b.scenario = 13;
  b.key = "reattach_first_byte";
  b.label = "first byte of a reattach: new connection, session by id, read "
            "(p50)";
  b.unit = "ms";
  b.ours = fresh50;
  b.baseline = rtt50;
  b.goal = "-";
  b.note = fmt::format("p99 {:.2f} ms", percentile(fresh, 0.99));
  rows.push_back(b);
  return rows;
}

row memory_row(const options& opt) {
  actors::embedded_node node{node_config(opt)};
  auto s = make_session(node, opt, "processes/idle");
  size_t n = opt.quick ? 20 : 200;
  constexpr uint64_t printed = 64 * 1024;
  // Warm-up: the session's first process makes what every later one
  // shares.
  (void) printed_process(s, "exec sleep 600", 0);
  auto before = heap_in_use();
  for (size_t i = 0; i < n; ++i)
    (void) printed_process(
      s,
      fmt::format("head -c {} /dev/zero | tr '\\\\0' x; exec sleep 600",
                  printed),
      printed);
  auto after = heap_in_use();
  (void) s.stop();
  auto per = static_cast<double>(after - before) / static_cast<double>(n);
  row r;
  r.scenario = 13;
  r.key = "process_idle_memory";
  r.label = "node heap per idle process that printed 64 KiB";
  r.unit = "KiB";
  r.ours = per / 1024.0;
  r.baseline = static_cast<double>(printed) / 1024.0;
  r.goal = "<= its output + 16 KiB";
  r.result = judge(per <= static_cast<double>(printed) + 16 * 1024);
  r.note = fmt::format("{} processes; baseline: the output each keeps", n);
  return r;
}

} // namespace

std::vector<row> run_processes(const options& opt) {
  auto rows = attach_rows(opt);
  rows.push_back(memory_row(opt));
  return rows;
}

} // namespace sandbox::bench
