// Scenario 13: long-lived processes (docs/processes.md). The first byte
// of an attach over loopback, against the round trip of a session `info`
// on the same connection; the memory an idle process costs the node
// beyond the output it keeps; and the output throughput of a process on a
// terminal, against a raw loop that reads a pseudo-terminal itself.

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
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

/// The node's heap per idle process that printed `printed` bytes.
double idle_process_heap(const options& opt, uint64_t printed, size_t n) {
  actors::embedded_node node{node_config(opt)};
  auto s = make_session(node, opt, "processes/idle");
  // Warm-up: the session's first process makes what every later one
  // shares.
  (void) printed_process(s, "exec sleep 600", 0);
  auto before = heap_in_use();
  for (size_t i = 0; i < n; ++i)
    (void) printed_process(
      s,
      printed == 0
        ? std::string{"exec sleep 600"}
        : fmt::format("head -c {} /dev/zero | tr '\\\\0' x; exec sleep 600",
                      printed),
      printed);
  auto after = heap_in_use();
  (void) s.stop();
  return static_cast<double>(after - before) / static_cast<double>(n);
}

row memory_row(const options& opt) {
  size_t n = opt.quick ? 20 : 200;
  constexpr uint64_t printed = 64 * 1024;
  auto per = idle_process_heap(opt, printed, n);
  auto silent = idle_process_heap(opt, 0, n);
  row r;
  r.scenario = 13;
  r.key = "process_idle_memory";
  r.label = "node heap per idle process that printed 64 KiB";
  r.unit = "KiB";
  r.ours = per / 1024.0;
  r.baseline = static_cast<double>(printed) / 1024.0;
  r.goal = "<= its output + 16 KiB";
  r.result = judge(per <= static_cast<double>(printed) + 16 * 1024);
  r.note = fmt::format("{} processes; baseline: the output each keeps; "
                       "one that printed nothing: {:.0f} KiB",
                       n, silent / 1024.0);
  return r;
}

/// The raw loop: `/bin/sh -c command` on a pseudo-terminal of its own
/// (`posix_openpt`), the master read 64 KiB at a time until the child
/// closed it (EIO), then reaped. Seconds from the fork to the reap.
double raw_terminal_run(const std::string& command) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0)
    throw std::runtime_error("posix_openpt failed");
  std::string peer = ::ptsname(master);
  auto t0 = clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    int fd = ::open(peer.c_str(), O_RDWR);
    if (fd < 0)
      ::_exit(127);
    ::dup2(fd, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (fd > 2)
      ::close(fd);
    ::execl("/bin/sh", "sh", "-c", command.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::vector<char> buf(64 * 1024);
  for (;;) {
    auto n = ::read(master, buf.data(), buf.size());
    if (n > 0 || (n < 0 && errno == EINTR))
      continue;
    break;
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  auto t1 = clock::now();
  ::close(master);
  return ms_between(t0, t1) / 1000.0;
}

/// The same command as a process of `s` on a terminal: seconds from the
/// start to its end, when the node has read all of its output into the
/// process's log (the end is told after the last byte).
double sandbox_terminal_run(actors::blocking_session& s,
                            const std::string& command) {
  actors::process_options o;
  o.tty = true;
  auto t0 = clock::now();
  auto p = s.start_process(command, o);
  if (!p)
    throw std::runtime_error("cannot start a process: " + p.error().message);
  for (;;) {
    auto info = s.wait_process(p->id, 60s);
    if (!info)
      throw std::runtime_error(info.error().message);
    if (!info->running)
      break;
  }
  return ms_between(t0, clock::now()) / 1000.0;
}

row terminal_row(const options& opt) {
  // A file of text lines, written once; `cat` puts it on the terminal,
  // whose line discipline turns each LF into CR LF in both runs.
  uint64_t bytes = opt.quick ? (16u << 20) : (64u << 20);
  char dir_template[] = "/tmp/sandbox-bench-tty-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  std::string dir = dir_template;
  auto file = dir + "/lines";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    if (f == nullptr)
      throw std::runtime_error("cannot write " + file);
    std::string line(79, 'x');
    line += '\n';
    for (uint64_t done = 0; done < bytes; done += line.size())
      std::fwrite(line.data(), 1, line.size(), f);
    std::fclose(f);
  }
  actors::embedded_node node{node_config(opt)};
  auto s = make_session(node, opt, "processes/terminal");
  auto command = "cat " + file;
  int rounds = opt.quick ? 3 : 5;
  std::vector<double> ours;
  std::vector<double> raw;
  // Alternated, so that both see the machine in the same state.
  for (int i = 0; i < rounds; ++i) {
    raw.push_back(raw_terminal_run(command));
    ours.push_back(sandbox_terminal_run(s, command));
  }
  (void) s.stop();
  ::unlink(file.c_str());
  ::rmdir(dir.c_str());
  // Throughput in MiB/s of the output the file puts on the terminal.
  auto mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  auto ours_rate = mib / percentile(ours, 0.5);
  auto raw_rate = mib / percentile(raw, 0.5);
  row r;
  r.scenario = 13;
  r.key = "terminal_throughput";
  r.label = "output throughput of a process on a terminal (median)";
  r.unit = "MiB/s";
  r.ours = ours_rate;
  r.baseline = raw_rate;
  r.goal = ">= 0.8 x raw";
  r.result = judge(ours_rate >= 0.8 * raw_rate);
  r.note = fmt::format("{} MiB of 80-byte lines by cat, {} rounds each, "
                       "alternated; baseline: posix_openpt and a read loop "
                       "of 64 KiB",
                       static_cast<int>(mib), rounds);
  return r;
}

} // namespace

std::vector<row> run_processes(const options& opt) {
  auto rows = attach_rows(opt);
  rows.push_back(memory_row(opt));
  rows.push_back(terminal_row(opt));
  return rows;
}

} // namespace sandbox::bench
