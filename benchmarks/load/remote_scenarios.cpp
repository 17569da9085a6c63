// Scenario 10: a remote node over loopback against the embedded node, in
// the same run: exec `true` throughput at concurrency 8, and 256 MiB of
// streamed output. The remote node is published by an actor system of its
// own in this process and reached through `remote_node` (its own actor
// system and middleman), so every message crosses a real TCP connection:
// plain, and with mutual TLS when the `openssl` tool can make certificates.

#include <algorithm>
#include <cstdlib>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <fmt/format.h>

#include "bench.hpp"
#include "load_driver.hpp"
#include "loopback_node.hpp"
#include "sandbox/actors/publish_accept.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/client/embedded_node.hpp"

namespace sandbox::bench {

namespace {

/// One node under test and the sessions it is driven through.
struct contender {
  std::string kind; // "embedded", "plain" or "tls"
  actors::basic_node* node = nullptr;
  std::vector<actors::blocking_session> sessions;
  double exec_rate = 0;
  uint64_t exec_errors = 0;
  /// Bytes/s of each streaming round, and whether every round completed.
  std::vector<double> stream_rates;
  bool stream_ok = true;
  /// CPU seconds of this process (node and client alike) per MiB, each
  /// round.
  std::vector<double> stream_cpu;
  /// Chunks the subscriber saw in the last round.
  uint64_t chunks = 0;
};

void open_sessions(contender& c, const options& opt) {
  for (size_t i = 0; i < 8; ++i) {
    auto s = actors::blocking_session::create(
      *c.node,
      session_config_for(opt, fmt::format("remote/{}/w{}", c.kind, i)));
    if (!s)
      throw std::runtime_error(s.error().message);
    c.sessions.push_back(std::move(*s));
  }
}

void measure_exec(contender& c, const options& opt) {
  auto once = [&](size_t w) {
    auto r = c.sessions[w].execute("true");
    return r && r->exit_code == 0;
  };
  drive(8, opt.quick ? 0.1 : 0.3, false, once);
  auto load = drive(8, opt.phase_seconds, false, once);
  c.exec_rate = load.rate();
  c.exec_errors = load.errors;
}

constexpr uint64_t stream_bytes = uint64_t{256} << 20;

void measure_stream(contender& c) {
  uint64_t seen = 0;
  uint64_t chunks = 0;
  auto cpu = cpu_now();
  auto start = clock::now();
  auto r = c.sessions[0].execute_streaming(fmt::format("head -c {} /dev/zero",
                                                       stream_bytes),
                                           {}, [&](const output_chunk& x) {
                                             seen += x.data.size();
                                             ++chunks;
                                           });
  auto secs = seconds_since(start);
  c.stream_cpu.push_back((cpu_now().self - cpu.self)
                         / (static_cast<double>(stream_bytes) / (1 << 20)));
  bool ok = r && r->exit_code == 0 && seen == stream_bytes;
  c.stream_ok = c.stream_ok && ok;
  c.chunks = chunks;
  c.stream_rates.push_back(ok && secs > 0 ? static_cast<double>(seen) / secs
                                          : 0);
}

double median(std::vector<double> xs) {
  return percentile(std::move(xs), 0.5);
}

/// A CA, and a certificate of each side signed by it, made with the
/// `openssl` tool in `dir`; empty configs when it is missing or fails.
std::pair<actors::tls_config, actors::tls_config>
make_certificates(const std::string& dir) {
  if (!make_dirs(dir))
    return {};
  auto q = sh_quote(dir);
  auto script = fmt::format(
    "cd {} && "
    "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=bench-ca "
    "-keyout ca.key -out ca.pem && "
    "for who in node client; do "
    "openssl req -newkey rsa:2048 -nodes -subj /CN=$who -keyout $who.key "
    "-out $who.csr && "
    "openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key "
    "-CAcreateserial -days 2 -out $who.pem || exit 1; done",
    q);
  auto cmd = "(" + script + ") >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0)
    return {};
  auto side = [&](const std::string& who) {
    return actors::tls_config{dir + "/" + who + ".pem",
                              dir + "/" + who + ".key", dir + "/ca.pem"};
  };
  return {side("node"), side("client")};
}

void add_rows(std::vector<row>& rows, const contender& embedded,
              const contender& remote) {
  auto kind = remote.kind == "tls" ? std::string{"tls"} : std::string{};
  row exec;
  exec.scenario = 10;
  exec.key = fmt::format("remote_{}exec_c8", kind.empty() ? "" : kind + "_");
  exec.label = fmt::format("remote{} exec `true`, concurrency 8",
                           kind.empty() ? "" : " " + kind);
  exec.unit = "exec/s";
  exec.ours = remote.exec_rate;
  exec.baseline = embedded.exec_rate;
  exec.goal = ">= 0.7 x embedded";
  exec.result = judge(exec.ratio() >= 0.7);
  exec.note = "baseline: the embedded node, same run";
  if (remote.exec_errors > 0)
    exec.note += fmt::format("; {} errors", remote.exec_errors);
  rows.push_back(std::move(exec));
  // Each round streams through every node, one after the other, so that a
  // ratio compares two runs a few seconds apart; the row shows the round
  // whose ratio is the median.
  std::vector<std::pair<double, size_t>> ratios;
  std::string each;
  for (size_t i = 0; i < remote.stream_rates.size(); ++i) {
    auto base = embedded.stream_rates[i];
    ratios.emplace_back(base > 0 ? remote.stream_rates[i] / base : 0, i);
    each += fmt::format("{}{:.2f}", i == 0 ? "" : " ", ratios.back().first);
  }
  std::sort(ratios.begin(), ratios.end());
  auto mid = ratios[ratios.size() / 2].second;
  row stream;
  stream.scenario = 10;
  stream.key = fmt::format("remote_{}stream_256m",
                           kind.empty() ? "" : kind + "_");
  stream.label = fmt::format("remote{} 256 MiB streamed output",
                             kind.empty() ? "" : " " + kind);
  stream.unit = "MiB/s";
  stream.ours = remote.stream_rates[mid] / (1 << 20);
  stream.baseline = embedded.stream_rates[mid] / (1 << 20);
  stream.goal = ">= 0.5 x embedded";
  stream.result = remote.stream_ok && embedded.stream_ok
                    ? judge(stream.ratio() >= 0.5)
                    : verdict::not_met;
  // CPU time is what a busy machine does not distort: the process's CPU
  // (node and client alike) per MiB, medians.
  stream.note = remote.stream_ok ? fmt::format(
                  "median of {} rounds ({}); CPU {:.2f} vs {:.2f} ms/MiB; "
                  "{:.0f} KiB per chunk",
                  ratios.size(), each, 1e3 * median(remote.stream_cpu),
                  1e3 * median(embedded.stream_cpu),
                  remote.chunks > 0 ? static_cast<double>(stream_bytes) / 1024
                                        / static_cast<double>(remote.chunks)
                                    : 0.0)
                                 : "the stream did not complete";
  rows.push_back(std::move(stream));
}

} // namespace

std::vector<row> run_remote(const options& opt) {
  // Every node lives for the whole group, so that each streaming round
  // measures all of them a few seconds apart under the same load.
  actors::embedded_node embedded_node{node_config(opt)};
  loopback_node plain_server{opt, {}};
  auto plain_client = actors::remote_node::connect(
    fmt::format("127.0.0.1:{}", plain_server.port));
  if (!plain_client)
    throw std::runtime_error(plain_client.error().message);
  auto [node_tls, client_tls] = make_certificates(opt.scratch + "/remote-tls");
  std::unique_ptr<loopback_node> tls_server;
  std::unique_ptr<actors::remote_node> tls_client;
  if (node_tls.enabled()) {
    tls_server = std::make_unique<loopback_node>(opt, node_tls);
    auto c = actors::remote_node::connect(
      fmt::format("127.0.0.1:{}", tls_server->port), client_tls);
    if (!c)
      throw std::runtime_error(c.error().message);
    tls_client = std::move(*c);
  }
  std::vector<contender> all;
  auto add = [&all](std::string kind, actors::basic_node* node) {
    all.emplace_back().kind = std::move(kind);
    all.back().node = node;
  };
  add("embedded", &embedded_node);
  add("plain", plain_client->get());
  if (tls_client)
    add("tls", tls_client.get());
  for (auto& c : all) {
    open_sessions(c, opt);
    measure_exec(c, opt);
  }
  const int rounds = opt.quick ? 3 : 5;
  for (int i = 0; i < rounds; ++i)
    for (auto& c : all)
      measure_stream(c);
  for (auto& c : all)
    for (auto& s : c.sessions)
      (void) s.stop();
  std::vector<row> rows;
  add_rows(rows, all[0], all[1]);
  if (all.size() > 2) {
    add_rows(rows, all[0], all[2]);
  } else {
    row r;
    r.scenario = 10;
    r.key = "remote_tls";
    r.label = "remote TLS";
    r.result = verdict::not_available;
    r.note = "n/a (the openssl tool could not make certificates)";
    rows.push_back(std::move(r));
  }
  // Destroyed in reverse order: the sessions (proxies of the clients'
  // systems) before the clients, the clients before the servers.
  return rows;
}

} // namespace sandbox::bench
