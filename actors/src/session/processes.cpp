// Long-lived processes of a session (docs/processes.md): each has a handle
// actor that is its output's sink, keeps its output log with absolute
// offsets, answers reads (at once or when bytes come, the process ends or
// the wait runs out) and passes stdin, close and signals to its process
// actor. The session maps ids (p-N) to handles.
#include "session/state.hpp"

#include <caf/stateful_actor.hpp>

#include "sandbox/output/output_log.hpp"

namespace sandbox::actors {

namespace {

/// What the process actor of a long-lived process keeps of each stream
/// for its result.
constexpr uint64_t process_result_cap = 1024;

/// A read or a wait that waits.
struct waiter {
  uint64_t id = 0;
  /// A read: from where, how much; a wait has `is_wait`.
  uint64_t from = 0;
  uint64_t max = 0;
  bool is_wait = false;
  caf::typed_response_promise<process_output> read_rp;
  caf::typed_response_promise<process_info> wait_rp;
};

struct handle_state {
  static inline const char* name = "sandbox.process_handle";

  std::string id;
  uint64_t number = 0;
  std::string command;
  int32_t pid = 0;
  process_actor child;
  /// Weak: the session holds its handles, not the other way round.
  caf::actor_addr session;
  std::unique_ptr<output_log> log;
  bool running = true;
  bool stdin_open = false;
  bool tty = false;
  int32_t exit_code = 0;
  exit_reason reason = exit_reason::exited;
  uint64_t next_waiter = 0;
  std::vector<waiter> waiters;
  /// The session was told that a read or a wait answered the end.
  bool end_told = false;

  process_info info() const {
    process_info i;
    i.id = id;
    i.command = command;
    i.pid = pid;
    i.running = running;
    i.stdin_open = stdin_open && running;
    i.tty = tty;
    i.exit_code = exit_code;
    i.reason = reason;
    i.next_offset = log->end();
    i.retained_from = log->begin();
    return i;
  }

  /// A read or a wait answers now: once it carries the end, the session
  /// learns that someone has it (`session_process::end_read`).
  void answering() {
    if (running || end_told)
      return;
    end_told = true;
    if (auto s = caf::actor_cast<session_actor_impl>(session))
      caf::anon_send(s, read_atom_v, number);
  }

  /// The answer to a read from `from` of up to `max` bytes.
  process_output read(uint64_t from, uint64_t max) {
    answering();
    auto r = log->read(from, max);
    process_output out;
    out.chunks = std::move(r.chunks);
    out.offset = r.offset;
    out.next_offset = r.next_offset;
    out.gap = r.gap;
    out.running = running;
    out.exit_code = exit_code;
    out.reason = reason;
    return out;
  }

  /// The answer to a wait (unlike `info`, which a list asks for, it counts
  /// as telling the end).
  process_info waited() {
    answering();
    return info();
  }

  /// Answers `w` now.
  void answer(waiter& w) {
    if (w.is_wait)
      w.wait_rp.deliver(waited());
    else
      w.read_rp.deliver(read(w.from, w.max));
  }

  /// Answers every waiter that now has its answer: a read once a byte at
  /// or after its offset exists (or the process ended), a wait once the
  /// process ended.
  void wake() {
    auto ready = [this](const waiter& w) {
      return !running || (!w.is_wait && w.from < log->end());
    };
    std::vector<waiter> still;
    for (auto& w : waiters) {
      if (!ready(w)) {
        still.push_back(std::move(w));
        continue;
      }
      answer(w);
    }
    waiters = std::move(still);
  }

  caf::error exited_error() const {
    return caf::make_error(errc::invalid_argument,
                           fmt::format("process {} has exited", id));
  }
};

using handle_ptr = process_handle::stateful_pointer<handle_state>;

/// A terminal's size is 1 to `max_terminal_side` rows and columns.
result<void> check_terminal_size(uint16_t rows, uint16_t cols) {
  if (rows == 0 || cols == 0 || rows > max_terminal_side
      || cols > max_terminal_side)
    return error{errc::invalid_argument,
                 fmt::format("invalid terminal size {} rows x {} columns: "
                             "each must be 1 to {}",
                             rows, cols, max_terminal_side)};
  return {};
}

/// Reads and waits that may wait at once per process; beyond, they are
/// answered at once (as if their wait were 0), so that callers cannot
/// make a process hold unbounded state.
constexpr size_t max_waiters = 256;

/// Waits up to `wait_ms` for `w` (answered by `wake` or the timeout).
void park(handle_ptr self, waiter w, uint32_t wait_ms) {
  auto& st = self->state;
  w.id = st.next_waiter++;
  self->delayed_send(self, std::chrono::milliseconds{wait_ms}, timeout_atom_v,
                     w.id);
  st.waiters.push_back(std::move(w));
}

/// Its process actor has the result: the process no longer runs.
void ended(handle_ptr self, int32_t exit_code, exit_reason reason) {
  auto& st = self->state;
  st.running = false;
  st.exit_code = exit_code;
  st.reason = reason;
  st.child = nullptr;
  // The session first: whoever the wake answers and then asks the session
  // (a list) finds the process counted as exited.
  if (auto session = caf::actor_cast<session_actor_impl>(st.session))
    self->send(session, exited_atom_v, st.number);
  st.wake();
}

/// The handle of process `number`, the sink of its output from the start;
/// its process actor comes with `start_atom` once the child runs.
process_handle::behavior_type
handle_behavior(handle_ptr self, uint64_t number, std::string command,
                uint64_t retain, bool tty, caf::actor_addr session) {
  auto& st = self->state;
  // Known from the start: output may come before `start_atom` does (it
  // comes from the process actor, `start_atom` from the session).
  st.tty = tty;
  st.id = fmt::format("p-{}", number);
  st.number = number;
  st.command = std::move(command);
  st.session = std::move(session);
  st.log = std::make_unique<output_log>(retain);
  return {
    [self](start_atom, process_actor child, int32_t pid, bool stdin_open) {
      auto& st = self->state;
      st.child = child;
      st.pid = pid;
      st.stdin_open = stdin_open;
      // Without stdin, the process reads end of file at once.
      if (!stdin_open)
        caf::anon_send(child, close_atom_v);
      // The result comes after every chunk of output (the process actor
      // sends them first, and CAF keeps the order between two actors).
      self->request(child, caf::infinite, wait_atom_v)
        .then([self](exec_result& r) { ended(self, r.exit_code, r.reason); },
              [self](caf::error& e) {
                log::logger()->warn("{}: no result: {}", self->state.id,
                                    to_string(e));
                ended(self, -1, exit_reason::stopped);
              });
    },
    [self](chunk_atom, output_chunk& c) -> ack_atom {
      // Never holds the process back: the log keeps the newest bytes.
      auto& st = self->state;
      st.log->append(st.tty ? stream_kind::pty : c.stream, c.data);
      self->state.wake();
      return ack_atom_v;
    },
    [self](proc_read_atom, uint64_t from, uint32_t wait_ms,
           uint64_t max) -> caf::result<process_output> {
      auto& st = self->state;
      if (from > st.log->end())
        return caf::make_error(
          errc::invalid_argument,
          fmt::format("offset {} is past the end of the output of {} ({})",
                      from, st.id, st.log->end()));
      if (from < st.log->end() || !st.running || wait_ms == 0 || max == 0
          || st.waiters.size() >= max_waiters)
        return st.read(from, max);
      waiter w;
      w.from = from;
      w.max = max;
      w.read_rp = self->make_response_promise<process_output>();
      auto rp = w.read_rp;
      park(self, std::move(w), wait_ms);
      return rp;
    },
    [self](wait_atom, uint32_t wait_ms) -> caf::result<process_info> {
      auto& st = self->state;
      if (!st.running || wait_ms == 0 || st.waiters.size() >= max_waiters)
        return st.waited();
      waiter w;
      w.is_wait = true;
      w.wait_rp = self->make_response_promise<process_info>();
      auto rp = w.wait_rp;
      park(self, std::move(w), wait_ms);
      return rp;
    },
    [self](timeout_atom, uint64_t id) {
      auto& st = self->state;
      auto i = std::find_if(st.waiters.begin(), st.waiters.end(),
                            [id](const waiter& w) { return w.id == id; });
      if (i == st.waiters.end())
        return;
      auto w = std::move(*i);
      st.waiters.erase(i);
      st.answer(w);
    },
    [self](stdin_atom, std::string& data) -> caf::result<ok_atom> {
      auto& st = self->state;
      if (!st.running)
        return st.exited_error();
      if (!st.stdin_open)
        return caf::make_error(errc::invalid_argument,
                               fmt::format("the stdin of process {} is closed",
                                           st.id));
      return self->delegate(st.child, stdin_atom_v, std::move(data));
    },
    [self](close_atom) -> caf::result<ok_atom> {
      auto& st = self->state;
      if (!st.running || !st.stdin_open)
        return ok_atom_v;
      // A terminal stays open: its process actor types ^D instead.
      if (!st.tty)
        st.stdin_open = false;
      return self->delegate(st.child, close_atom_v);
    },
    [self](kill_atom, int32_t sig) -> caf::result<ok_atom> {
      auto& st = self->state;
      if (!st.running)
        return st.exited_error();
      return self->delegate(st.child, kill_atom_v, sig);
    },
    [self](resize_atom, uint16_t rows, uint16_t cols) -> caf::result<ok_atom> {
      auto& st = self->state;
      if (auto ok = check_terminal_size(rows, cols); !ok)
        return to_caf(ok.error());
      if (!st.running)
        return st.exited_error();
      if (!st.tty)
        return caf::make_error(errc::invalid_argument,
                               fmt::format("process {} has no terminal to "
                                           "resize",
                                           st.id));
      return self->delegate(st.child, resize_atom_v, rows, cols);
    },
    [self](info_atom) -> process_info { return self->state.info(); },
  };
}

/// The number N of an id `p-N`; 0 when `id` is not one.
uint64_t process_number(const std::string& id) {
  if (id.size() < 3 || id.compare(0, 2, "p-") != 0 || id[2] == '0')
    return 0;
  uint64_t n = 0;
  for (size_t i = 2; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9' || n > (UINT64_MAX - 9) / 10)
      return 0;
    n = n * 10 + static_cast<uint64_t>(id[i] - '0');
  }
  return n;
}

} // namespace

namespace session_detail {

caf::expected<process_handle> find_process(session_state& st,
                                           const std::string& id) {
  if (st.stopped)
    return session_stopped(st);
  auto n = process_number(id);
  auto i = n == 0 ? st.processes.end() : st.processes.find(n);
  if (i == st.processes.end())
    return caf::make_error(errc::process_not_found,
                           fmt::format("no process {} in session {}", id,
                                       st.p.id));
  return i->second.handle;
}

void drop_process(self_ptr self, const session_process& p) {
  self->unlink_from(p.handle);
  caf::anon_send_exit(p.handle, caf::exit_reason::user_shutdown);
  self->state.p.rt->release_process_output(p.reserved);
}

caf::result<process_info> start_process(self_ptr self, std::string& cmd,
                                        process_options& opts) {
  auto& st = self->state;
  if (opts.retain > max_process_retain)
    return caf::make_error(
      errc::invalid_argument,
      fmt::format("retain {} is more than a process may keep ({})", opts.retain,
                  max_process_retain));
  if (opts.tty)
    if (auto ok = check_terminal_size(opts.rows, opts.cols); !ok)
      return to_caf(ok.error());
  auto retain = opts.retain == 0 ? default_process_retain : opts.retain;
  auto exec_id = st.p.rt->next_id();
  auto number = st.next_process;
  // The handle's log is its output; the process actor keeps only a sliver
  // for its result (which nobody reads), not an execution's 16 MiB.
  opts.exec.output_cap = process_result_cap;
  opts.exec.cancel_key.clear();
  if (!st.p.rt->reserve_process_output(retain))
    return caf::make_error(
      errc::invalid_argument,
      fmt::format("cannot start a process keeping {} bytes of output: the "
                  "node's processes keep at most {} bytes together, and {} "
                  "are taken (stop processes or sessions, or ask for a "
                  "smaller retain)",
                  retain, st.p.rt->config().process_retain_total,
                  st.p.rt->process_output_reserved()));
  // Its handle is its sink, so it comes first; linked: it goes with the
  // session. The session gives the reservation back when it lets go of
  // the handle (`drop_process`).
  auto handle = self->spawn<caf::linked>(handle_behavior, number, cmd, retain,
                                         opts.tty, self->address());
  auto spec = prepare(st, cmd, opts.exec, exec_id);
  if (spec && opts.tty) {
    spec->terminal = terminal_size{opts.rows, opts.cols};
    if (opts.exec.env.count("TERM") == 0 && st.p.env.count("TERM") == 0)
      spec->env["TERM"] = "xterm-256color";
  }
  auto s = start(self, std::move(spec), opts.exec,
                 caf::actor_cast<chunk_sink>(handle), exec_id, std::nullopt,
                 true);
  if (!s) {
    drop_process(self, session_process{handle, retain});
    return to_caf(s.error());
  }
  ++st.next_process;
  process_actor child = s->handle;
  auto pid = static_cast<int32_t>(s->pid);
  auto stdin_open = opts.open_stdin || opts.tty;
  self->send(handle, start_atom_v, child, pid, stdin_open);
  st.processes.emplace(number, session_process{handle, retain});
  process_info info;
  info.id = fmt::format("p-{}", number);
  info.command = cmd;
  info.pid = pid;
  info.stdin_open = stdin_open;
  info.tty = opts.tty;
  return info;
}

void process_exited(self_ptr self, uint64_t number) {
  auto& st = self->state;
  st.exited_processes.push_back(number);
  while (st.exited_processes.size() > max_exited_processes) {
    // The oldest whose end someone read, else the oldest.
    auto& ex = st.exited_processes;
    auto victim = std::find_if(ex.begin(), ex.end(), [&st](uint64_t n) {
      auto i = st.processes.find(n);
      return i != st.processes.end() && i->second.end_read;
    });
    if (victim == ex.end())
      victim = ex.begin();
    auto gone = *victim;
    ex.erase(victim);
    if (auto i = st.processes.find(gone); i != st.processes.end()) {
      drop_process(self, i->second);
      st.processes.erase(i);
    }
  }
}

} // namespace session_detail

} // namespace sandbox::actors
