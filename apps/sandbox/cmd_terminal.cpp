// Processes on a terminal from the CLI (docs/processes.md "Terminals",
// docs/cli.md "Processes"): `run --tty` runs a command on a pseudo-terminal
// of the session and connects it to the CLI's own terminal (raw mode, the
// window's size forwarded, the exit status the command's); `resize` sets
// the size of a detached process's terminal.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cli.hpp"
#include "interrupt.hpp"

namespace sandbox::cli {

namespace {

/// Keys typed are passed on this much at a time at most.
constexpr size_t key_chunk = 4096;

/// Where the SIGWINCH handler tells the input thread that the window
/// changed (`wake_pipe::wake`: it only writes a byte).
std::atomic<const wake_pipe*> winch{nullptr};

extern "C" void on_winch(int) {
  if (auto* w = winch.load()) {
    int saved = errno;
    w->wake();
    errno = saved;
  }
}

/// The size of the CLI's terminal (`fd`), if it is one.
std::optional<terminal_size> window_of(int fd) {
  struct winsize ws = {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0)
    return std::nullopt;
  return terminal_size{ws.ws_row, ws.ws_col};
}

/// The CLI's terminal in raw mode while alive (every key goes to the
/// process as typed: ^C is a byte for its terminal, not a signal for the
/// CLI); put back as it was by `restore` or the destructor.
class raw_mode {
public:
  explicit raw_mode(int fd) : fd_(fd) {
    if (::tcgetattr(fd, &saved_) != 0)
      return;
    auto raw = saved_;
    ::cfmakeraw(&raw);
    if (::tcsetattr(fd, TCSAFLUSH, &raw) == 0)
      active_ = true;
  }
  ~raw_mode() {
    restore();
  }
  raw_mode(const raw_mode&) = delete;
  raw_mode& operator=(const raw_mode&) = delete;

  /// Any thread; once.
  void restore() {
    std::lock_guard<std::mutex> guard{mtx_};
    if (active_)
      (void) ::tcsetattr(fd_, TCSAFLUSH, &saved_);
    active_ = false;
  }

private:
  int fd_;
  struct termios saved_ = {};
  std::mutex mtx_;
  bool active_ = false;
};

/// Passes the CLI's stdin to the process and the window's size changes to
/// its terminal until `quit` becomes readable or stdin ends (then the
/// terminal's end of file goes to the process).
void feed_terminal(actors::blocking_session s, const std::string& id,
                   int resized, int quit, bool follow_window) {
  std::string buf;
  bool input = true;
  for (;;) {
    struct pollfd fds[3]
      = {{quit, POLLIN, 0}, {resized, POLLIN, 0}, {input ? 0 : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    if (fds[0].revents != 0)
      return;
    if (fds[1].revents != 0) {
      char drain[64];
      while (::read(resized, drain, sizeof drain) > 0)
        ;
      if (follow_window)
        if (auto size = window_of(0))
          (void) s.resize_process(id, size->rows, size->cols);
    }
    if (fds[2].revents != 0) {
      buf.resize(key_chunk);
      auto n = ::read(0, buf.data(), buf.size());
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        // Stdin ended (a pipe, not a terminal): end of file for the
        // process, which may still print.
        (void) s.close_process_stdin(id);
        input = false;
        continue;
      }
      buf.resize(static_cast<size_t>(n));
      if (!s.write_process(id, buf))
        return;
    }
  }
}

/// Runs process `id` of `s` connected to the CLI: its output to stdout
/// until it ends, stdin and window changes to it. The exit status is the
/// process's.
int connect_terminal(const global_options& g, actors::blocking_session& s,
                     const std::string& id, bool follow_window) {
  std::optional<raw_mode> raw;
  if (::isatty(0) != 0)
    raw.emplace(0);
  wake_pipe window;
  wake_pipe quit;
  struct sigaction sa = {};
  struct sigaction old_sa = {};
  sa.sa_handler = on_winch;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  winch.store(&window);
  ::sigaction(SIGWINCH, &sa, &old_sa);
  // An interrupt of the CLI (SIGTERM, SIGHUP; ^C is a key here) hangs the
  // terminal up, as closing a terminal window does.
  interrupt_guard guard{[&] {
    if (raw)
      raw->restore();
    (void) s.kill_process(id, SIGHUP);
  }};
  std::thread feeder{feed_terminal, s,           id,
                     window.fds[0], quit.fds[0], follow_window};
  auto status = write_output(g, s, id, 0, true);
  quit.wake();
  feeder.join();
  ::sigaction(SIGWINCH, &old_sa, nullptr);
  winch.store(nullptr);
  if (raw)
    raw->restore();
  return status;
}

} // namespace

int run_detached(const global_options& g, const std::string& command,
                 const actors::process_options& popts) {
  return with_existing_session(g, "run --detach",
                               [&](actors::blocking_session& s) {
                                 auto p = s.start_process(command, popts);
                                 if (!p)
                                   return report(g, p.error());
                                 if (g.json)
                                   print_json(process_json(*p, g.session));
                                 else
                                   emit(1, p->id + "\n");
                                 return output_status(exit_ok);
                               });
}

int run_terminal(const global_options& g, const std::string& command,
                 actors::process_options popts, bool size_given) {
  // Without --rows and --cols, the CLI's own window's size, followed.
  bool follow = !size_given;
  if (follow)
    if (auto size = window_of(0)) {
      popts.rows = size->rows;
      popts.cols = size->cols;
    }
  return with_session(
    g,
    [&](actors::blocking_session& s) {
      auto p = s.start_process(command, popts);
      if (!p)
        return report(g, p.error());
      return connect_terminal(g, s, p->id, follow);
    },
    true);
}

command add_resize(CLI::App& app, global_options& g) {
  struct flags {
    std::string id;
    int rows = 0;
    int cols = 0;
  };
  auto f = std::make_shared<flags>();
  command cmd;
  cmd.sub = app.add_subcommand(
    "resize", "set the size of a process's terminal (run --detach --tty); "
              "its foreground job gets SIGWINCH");
  cmd.sub->add_option("id", f->id, "the process id, e.g. p-1")->required();
  cmd.sub->add_option("--rows", f->rows, "rows (1 to 10000)")
    ->required()
    ->check(terminal_side());
  cmd.sub->add_option("--cols", f->cols, "columns (1 to 10000)")
    ->required()
    ->check(terminal_side());
  cmd.sub->footer(global_options_footer);
  cmd.run = [&g, f] {
    return with_existing_session(g, "resize", [&](actors::blocking_session& s) {
      if (auto r = s.resize_process(f->id, static_cast<uint16_t>(f->rows),
                                    static_cast<uint16_t>(f->cols));
          !r)
        return report(g, r.error());
      return exit_ok;
    });
  };
  return cmd;
}

} // namespace sandbox::cli
