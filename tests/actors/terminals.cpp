#define CAF_SUITE actors.terminals
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Long-lived processes on a terminal (docs/processes.md, "Terminals"): the
// size asked for, a controlling terminal with job control, ^C to the
// foreground group only, SIGWINCH on a resize, ^D for the end of input,
// and, in a contained session, a terminal of the session's own devpts.

#include <dirent.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "contained_fixture.hpp"
#include "fixture.hpp"
#include "sandbox/process/process_tree.hpp"

using namespace std::chrono_literals;
using sandbox::errc;
using sandbox::stream_kind;
using sandbox::actors::blocking_session;
using sandbox::actors::process_options;

namespace {

process_options terminal(uint16_t rows = 24, uint16_t cols = 80) {
  process_options o;
  o.tty = true;
  o.rows = rows;
  o.cols = cols;
  return o;
}

/// Reads `id`'s output from `from` on until it holds `want` or the process
/// ended with nothing more to read; returns what it read (every chunk must
/// be of the terminal's one stream) and moves `from` past it.
std::string read_until(blocking_session& s, const std::string& id,
                       uint64_t& from, const std::string& want) {
  std::string out;
  // Each read waits up to 10 s for a byte; 3 such waits in a row fail.
  for (int idle = 0; idle < 3;) {
    auto r = s.read_process(id, from, 10s);
    if (!r)
      CAF_FAIL("read of " << id << " failed: " << r.error().message);
    for (auto& c : r->chunks) {
      CAF_CHECK(c.stream == stream_kind::pty);
      out += c.data;
    }
    idle = r->next_offset == from ? idle + 1 : 0;
    from = r->next_offset;
    if (out.find(want) != std::string::npos
        || (!r->running && r->offset == r->next_offset))
      return out;
  }
  return out;
}

/// Everything `id` prints until it ends.
std::string read_to_end(blocking_session& s, const std::string& id) {
  uint64_t from = 0;
  return read_until(s, id, from, std::string{"\0never\0", 7});
}

/// Whether a child of `parent` runs `comm` (it has exec'd) and leads the
/// foreground group of its terminal (/proc/PID/stat).
bool foreground_child(pid_t parent, const std::string& comm) {
  auto* d = ::opendir("/proc");
  if (d == nullptr)
    return false;
  bool found = false;
  while (auto* e = ::readdir(d)) {
    std::string text;
    if (e->d_name[0] < '1' || e->d_name[0] > '9'
        || !sandbox::read_small_file(
          std::string{"/proc/"} + e->d_name + "/stat", text))
      continue;
    auto open = text.find('(');
    auto close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos
        || text.compare(open + 1, close - open - 1, comm) != 0)
      continue;
    std::istringstream in{text.substr(close + 2)};
    char state;
    long ppid, pgrp, session, tty, tpgid;
    if ((in >> state >> ppid >> pgrp >> session >> tty >> tpgid)
        && ppid == parent && pgrp == tpgid) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(terminal_tests, sandbox::test::node_fixture)

CAF_TEST(a terminal has the size asked for and is the controlling terminal) {
  auto s = make_session();
  auto p = s.start_process("stty size; tty; test -t 0 && test -t 1 && "
                           "test -t 2 && echo all-terminal; "
                           "exec 3</dev/tty && echo controlling; "
                           "echo TERM=$TERM",
                           terminal(30, 100));
  SANDBOX_REQUIRE_OK(p);
  CAF_CHECK(p->tty);
  CAF_CHECK(p->stdin_open);
  auto out = read_to_end(s, p->id);
  // The terminal turns each newline into CR LF, as any terminal does.
  CHECK_THAT(has(out, "30 100\r\n"), out);
  CHECK_THAT(has(out, "/dev/pts/"), out);
  CHECK_THAT(has(out, "all-terminal\r\n"), out);
  CHECK_THAT(has(out, "controlling\r\n"), out);
  CHECK_THAT(has(out, "TERM=xterm-256color\r\n"), out);
  auto info = s.wait_process(p->id, 10s);
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(!info->running);
  CAF_CHECK_EQUAL(info->exit_code, 0);
  CAF_CHECK(info->tty);
}

CAF_TEST(the environment of the call or the session may name another TERM) {
  auto s = make_session({{"TERM", "vt100"}});
  auto p = s.start_process("echo TERM=$TERM", terminal());
  SANDBOX_REQUIRE_OK(p);
  CHECK_THAT(has(read_to_end(s, p->id), "TERM=vt100\r\n"), "session");
  auto o = terminal();
  o.exec.env["TERM"] = "dumb";
  auto q = s.start_process("echo TERM=$TERM", o);
  SANDBOX_REQUIRE_OK(q);
  CHECK_THAT(has(read_to_end(s, q->id), "TERM=dumb\r\n"), "call");
}

CAF_TEST(a resize reaches a WINCH trap with the new size) {
  auto s = make_session();
  auto p = s.start_process("trap 'stty size; exit 0' WINCH; echo ready; "
                           "while :; do sleep 1 & wait $!; done",
                           terminal(24, 80));
  SANDBOX_REQUIRE_OK(p);
  uint64_t from = 0;
  auto out = read_until(s, p->id, from, "ready\r\n");
  REQUIRE_THAT(has(out, "ready\r\n"), out);
  SANDBOX_REQUIRE_OK(s.resize_process(p->id, 40, 132));
  out = read_until(s, p->id, from, "40 132\r\n");
  CHECK_THAT(has(out, "40 132\r\n"), out);
  auto info = s.wait_process(p->id, 10s);
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(!info->running);
  CAF_CHECK_EQUAL(info->exit_code, 0);
}

CAF_TEST(a resize is refused for a bad size a process without terminal and an
           exited one) {
  auto s = make_session();
  auto plain = s.start_process("sleep 30");
  SANDBOX_REQUIRE_OK(plain);
  auto r = s.resize_process(plain->id, 10, 10);
  CAF_REQUIRE(!r);
  CAF_CHECK_EQUAL(r.error().code, errc::invalid_argument);
  CHECK_THAT(has(r.error().message, "has no terminal"), r.error().message);
  auto t = s.start_process("sleep 30", terminal());
  SANDBOX_REQUIRE_OK(t);
  for (auto [rows, cols] :
       {std::pair{0, 80}, std::pair{24, 0}, std::pair{10001, 80}}) {
    auto bad = s.resize_process(t->id, static_cast<uint16_t>(rows),
                                static_cast<uint16_t>(cols));
    CAF_REQUIRE(!bad);
    CAF_CHECK_EQUAL(bad.error().code, errc::invalid_argument);
    CHECK_THAT(has(bad.error().message, "invalid terminal size"),
               bad.error().message);
  }
  auto bad_start = s.start_process("true", terminal(0, 80));
  CAF_REQUIRE(!bad_start);
  CAF_CHECK_EQUAL(bad_start.error().code, errc::invalid_argument);
  SANDBOX_REQUIRE_OK(s.kill_process(t->id, SIGKILL));
  SANDBOX_REQUIRE_OK(s.wait_process(t->id, 10s));
  auto gone = s.resize_process(t->id, 10, 10);
  CAF_REQUIRE(!gone);
  CHECK_THAT(has(gone.error().message, "has exited"), gone.error().message);
  SANDBOX_CHECK_OK(s.kill_process(plain->id, SIGKILL));
}

CAF_TEST(ctrl c ends the foreground job and the shell survives) {
  auto s = make_session();
  auto o = terminal();
  o.exec.env["PS1"] = "prompt> ";
  auto p = s.start_process("exec bash --norc --noprofile -i", o);
  SANDBOX_REQUIRE_OK(p);
  uint64_t from = 0;
  auto out = read_until(s, p->id, from, "prompt> ");
  REQUIRE_THAT(has(out, "prompt> "), out);
  // The echo of the typed line shows the quotes; only the command's own
  // output has the word whole.
  SANDBOX_REQUIRE_OK(s.write_process(p->id, "echo st''arted; sleep 100\n"));
  out = read_until(s, p->id, from, "started\r\n");
  REQUIRE_THAT(has(out, "started\r\n"), out);
  // ^C once the sleep is the foreground job (bash itself may take a ^C
  // that comes while it starts the job for the end of its input).
  for (int i = 0; i < 10000 && !foreground_child(p->pid, "sleep"); ++i)
    std::this_thread::sleep_for(1ms);
  REQUIRE_THAT(foreground_child(p->pid, "sleep"),
               "no foreground sleep: " << out);
  SANDBOX_REQUIRE_OK(s.write_process(p->id, "\x03"));
  // ^C flushes what was typed after it and not yet read, as on any
  // terminal: the next line waits for the prompt.
  out = read_until(s, p->id, from, "prompt> ");
  REQUIRE_THAT(has(out, "prompt> "), out);
  SANDBOX_REQUIRE_OK(s.write_process(p->id, "echo status-$((100+$?))\n"));
  out = read_until(s, p->id, from, "status-230");
  CHECK_THAT(has(out, "status-230"), out);
  auto info = s.wait_process(p->id, 0ms);
  SANDBOX_REQUIRE_OK(info);
  if (!info->running) {
    auto all = s.read_process(p->id, 0, 0ms);
    std::string text;
    for (auto& c : all->chunks)
      text += c.data;
    CAF_FAIL("exit " << info->exit_code << " after " << text);
  }
  SANDBOX_REQUIRE_OK(s.write_process(p->id, "exit 3\n"));
  info = s.wait_process(p->id, 10s);
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(!info->running);
  CAF_CHECK_EQUAL(info->exit_code, 3);
}

CAF_TEST(python3 - i is driven line by line and ctrl d ends it) {
  auto s = make_session();
  auto p = s.start_process("exec python3 -q -i", terminal());
  SANDBOX_REQUIRE_OK(p);
  uint64_t from = 0;
  auto out = read_until(s, p->id, from, ">>> ");
  REQUIRE_THAT(has(out, ">>> "), out);
  SANDBOX_REQUIRE_OK(s.write_process(p->id, "x = 6 * 7\n"));
  SANDBOX_REQUIRE_OK(s.write_process(p->id, "print(x + 1000)\n"));
  out = read_until(s, p->id, from, "1042\r\n>>> ");
  REQUIRE_THAT(has(out, "1042\r\n>>> "), out);
  // Closing the stdin of a terminal types its end-of-file character
  // (once the prompt is out: typed earlier, it may meet the terminal in
  // the mode of the line before, as on any terminal).
  SANDBOX_REQUIRE_OK(s.close_process_stdin(p->id));
  auto info = s.wait_process(p->id, 10s);
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(!info->running);
  CAF_CHECK_EQUAL(info->exit_code, 0);
}

CAF_TEST(a stop ends a process on a terminal) {
  auto s = make_session();
  auto p = s.start_process("sleep 100", terminal());
  SANDBOX_REQUIRE_OK(p);
  auto marker = this->marker(s);
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
  CAF_CHECK_EQUAL(sandbox::test::processes_with(marker), 0u);
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST_FIXTURE_SCOPE(contained_terminal_tests,
                       sandbox::test::contained_fixture)

CAF_TEST(a contained terminal is of the sessions own devpts) {
  if (!sandbox::test::host_can_contain())
    return;
  start();
  auto s = make_session();
  // Two at once: each its own terminal, both of the session's instance,
  // which holds nothing else (not the host's terminals).
  auto first = s.start_process("sleep 100", terminal());
  SANDBOX_REQUIRE_OK(first);
  auto p = s.start_process("tty; ls /dev/pts | tr '\\n' ' '; echo", terminal());
  SANDBOX_REQUIRE_OK(p);
  auto out = read_to_end(s, p->id);
  CHECK_THAT(has(out, "/dev/pts/1\r\n"), out);
  CHECK_THAT(has(out, "\r\n0 1 ptmx \r\n"), out);
  SANDBOX_CHECK_OK(s.stop());
}

CAF_TEST_FIXTURE_SCOPE_END()
