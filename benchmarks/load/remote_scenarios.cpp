// Scenario 10: a remote node over loopback against the embedded node, in
// the same run: exec `true` throughput at concurrency 8, and 256 MiB of
// streamed output. The remote node is published by an actor system of its
// own in this process and reached through `remote_node` (its own actor
// system and middleman), so every message crosses a real TCP connection:
// plain, and with mutual TLS when the `openssl` tool can make certificates.

#include <cstdlib>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <fmt/format.h>

#include "bench.hpp"
#include "load_driver.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"

namespace sandbox::bench {

namespace {

/// A node published on a free loopback port by an actor system of its own.
struct loopback_node {
  actors::system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  actors::node_actor node;
  uint16_t port = 0;

  loopback_node(const options& opt, const actors::tls_config& tls) {
    actors::configure_remote(cfg, tls);
    sys = std::make_unique<caf::actor_system>(cfg);
    auto rt = std::make_shared<actors::runtime>(node_config(opt));
    node = actors::spawn_node(*sys, rt, {});
    auto p = actors::publish_node(*sys, node, "127.0.0.1", 0, tls.enabled());
    if (!p)
      throw std::runtime_error(p.error().message);
    port = *p;
  }

  ~loopback_node() {
    caf::scoped_actor self{*sys};
    self->request(node, caf::infinite, actors::stop_atom_v)
      .receive([](uint32_t) {}, [](caf::error&) {});
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    node = nullptr;
    // Actors sent to a remote client stay registered while they live, and
    // stopped sessions live on: the system would wait for them forever. It
    // is left to the end of the process.
    (void) sys.release();
  }
};

/// What one node achieved.
struct figures {
  double exec_rate = 0;
  uint64_t exec_errors = 0;
  double stream_rate = 0; // bytes/s
  bool stream_ok = false;
};

figures measure(actors::basic_node& node, const options& opt,
                const std::string& tag) {
  figures f;
  const double warmup = opt.quick ? 0.1 : 0.3;
  std::vector<actors::blocking_session> sessions;
  for (size_t i = 0; i < 8; ++i) {
    auto s = actors::blocking_session::create(
      node, session_config_for(opt, fmt::format("{}/w{}", tag, i)));
    if (!s)
      throw std::runtime_error(s.error().message);
    sessions.push_back(std::move(*s));
  }
  auto once = [&](size_t w) {
    auto r = sessions[w].execute("true");
    return r && r->exit_code == 0;
  };
  drive(8, warmup, false, once);
  auto load = drive(8, opt.phase_seconds, false, once);
  f.exec_rate = load.rate();
  f.exec_errors = load.errors;
  const uint64_t bytes = uint64_t{256} << 20;
  uint64_t seen = 0;
  auto start = clock::now();
  auto r = sessions[0].execute_streaming(
    fmt::format("head -c {} /dev/zero", bytes), {},
    [&](const output_chunk& c) { seen += c.data.size(); });
  auto secs = seconds_since(start);
  f.stream_ok = r && r->exit_code == 0 && seen == bytes;
  f.stream_rate = secs > 0 ? static_cast<double>(seen) / secs : 0;
  for (auto& s : sessions)
    (void) s.stop();
  return f;
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
    return actors::tls_config{dir + "/" + who + ".pem", dir + "/" + who + ".key",
                              dir + "/ca.pem"};
  };
  return {side("node"), side("client")};
}

void add_rows(std::vector<row>& rows, const figures& embedded,
              const figures& remote, const std::string& kind) {
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
  row stream;
  stream.scenario = 10;
  stream.key = fmt::format("remote_{}stream_256m",
                           kind.empty() ? "" : kind + "_");
  stream.label = fmt::format("remote{} 256 MiB streamed output",
                             kind.empty() ? "" : " " + kind);
  stream.unit = "MiB/s";
  stream.ours = remote.stream_rate / (1 << 20);
  stream.baseline = embedded.stream_rate / (1 << 20);
  stream.goal = ">= 0.5 x embedded";
  stream.result = remote.stream_ok && embedded.stream_ok
                    ? judge(stream.ratio() >= 0.5)
                    : verdict::not_met;
  stream.note = remote.stream_ok ? "baseline: the embedded node, same run"
                                 : "the stream did not complete";
  rows.push_back(std::move(stream));
}

} // namespace

std::vector<row> run_remote(const options& opt) {
  std::vector<row> rows;
  figures embedded;
  {
    actors::embedded_node node{node_config(opt)};
    embedded = measure(node, opt, "remote/embedded");
  }
  {
    loopback_node server{opt, {}};
    auto client = actors::remote_node::connect(
      fmt::format("127.0.0.1:{}", server.port));
    if (!client)
      throw std::runtime_error(client.error().message);
    add_rows(rows, embedded, measure(**client, opt, "remote/plain"), "");
  }
  auto [node_tls, client_tls] = make_certificates(opt.scratch + "/remote-tls");
  if (!node_tls.enabled()) {
    row r;
    r.scenario = 10;
    r.key = "remote_tls";
    r.label = "remote TLS";
    r.result = verdict::not_available;
    r.note = "n/a (the openssl tool could not make certificates)";
    rows.push_back(std::move(r));
    return rows;
  }
  loopback_node server{opt, node_tls};
  auto client = actors::remote_node::connect(
    fmt::format("127.0.0.1:{}", server.port), client_tls);
  if (!client)
    throw std::runtime_error(client.error().message);
  add_rows(rows, embedded, measure(**client, opt, "remote/tls"), "tls");
  return rows;
}

} // namespace sandbox::bench
