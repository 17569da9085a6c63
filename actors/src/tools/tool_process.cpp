#include "tool_process.hpp"

#include <signal.h>

#include <chrono>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "sandbox/validation.hpp"
#include "tool_exec.hpp"
#include "tool_schema.hpp"
#include "tool_text.hpp"

namespace sandbox::actors::detail {

namespace {

using nlohmann::json;
using steady = std::chrono::steady_clock;

/// The longest a call waits for output, in seconds (a read's longest wait).
constexpr double max_yield_seconds = max_process_wait_ms / 1000.0;

/// Once output has come, a call answers after this long without more.
constexpr auto quiet_after_output = std::chrono::milliseconds{200};

json yield_schema(double fallback) {
  return {{"type", "number"},
          {"minimum", 0},
          {"maximum", max_yield_seconds},
          {"description",
           fmt::format("Seconds to wait for output before answering (default "
                       "{:g}): the call answers earlier when the process "
                       "ends, or once output came and then paused for 0.2 s.",
                       fallback)}};
}

json terminal_side_schema(const char* what, int fallback) {
  return {{"type", "integer"},
          {"minimum", 1},
          {"maximum", max_terminal_side},
          {"description",
           fmt::format("{} of the terminal with `tty` (default {}).", what,
                       fallback)}};
}

json process_id_schema() {
  return {{"type", "string"},
          {"description", "The process id process_start answered, e.g. "
                          "\"p-1\"."}};
}

std::chrono::milliseconds yield_of(const json& args, double fallback) {
  auto s = args.value("yield_seconds", fallback);
  return std::chrono::milliseconds{static_cast<int64_t>(std::ceil(s * 1000))};
}

/// "[process p-1 is running; ...]", "[process p-1 ended: exit code 0]";
/// an ended process with `more` output to read says where it continues.
std::string status_line(const std::string& id, bool running, bool more,
                        int32_t exit_code, exit_reason reason,
                        uint64_t next_offset) {
  if (running)
    return fmt::format("[process {} is running; its output continues at "
                       "offset {}]",
                       id, next_offset);
  return fmt::format(
    "[process {} ended: {}{}]", id, exit_phrase(exit_code, reason, {}),
    more ? fmt::format("; its output continues at offset {}", next_offset)
         : std::string{});
}

/// Reads `id` from `from` until it ends, `yield` passes, the output paused
/// after it came, or `cap` bytes were read; the tool's answer.
tool_result collect(blocking_session& session, const toolbox_options& opts,
                    process_offsets& offsets, const std::string& id,
                    uint64_t from, std::chrono::milliseconds yield) {
  auto deadline = steady::now() + yield;
  std::string out;
  // Bytes no longer kept, at the start or (a slow call on a fast
  // process) between two reads.
  uint64_t gap = 0;
  uint64_t at = from;
  std::optional<uint64_t> first_offset;
  process_output last;
  for (;;) {
    auto now = steady::now();
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline > now ? deadline - now : steady::duration::zero());
    // Once output came, only a short pause more.
    auto wait = out.empty() ? left : std::min(left, quiet_after_output);
    auto room = opts.output_cap > out.size() ? opts.output_cap - out.size() : 0;
    auto r = session.read_process(id, at, wait, room);
    if (!r)
      return tool_failure(to_string(r.error().code), r.error().message);
    gap += r->gap;
    if (!first_offset)
      first_offset = r->offset;
    for (auto& c : r->chunks)
      out += c.data;
    at = r->next_offset;
    last = std::move(*r);
    bool empty = last.next_offset == last.offset;
    if ((!last.running && empty) || out.size() >= opts.output_cap
        || (empty && (!out.empty() || steady::now() >= deadline)))
      break;
  }
  // Stopped at the cap: more may wait, ended or not.
  bool capped = out.size() >= opts.output_cap;
  offsets.set(id, at);
  tool_result res;
  auto text = to_valid_utf8(out);
  if (gap > 0)
    res.text += fmt::format("[{} bytes of output were no longer kept]\n", gap);
  res.text += text;
  if (!text.empty() && text.back() != '\n')
    res.text += '\n';
  res.text += status_line(id, last.running, capped, last.exit_code, last.reason,
                          at);
  res.text += '\n';
  res.structured
    = {{"process_id", id},  {"running", last.running},
       {"output", text},    {"offset", first_offset.value_or(from)},
       {"next_offset", at}, {"gap", gap}};
  if (!last.running) {
    res.structured["exit_code"] = last.exit_code;
    res.structured["exit_reason"] = to_string(last.reason);
  }
  return res;
}

} // namespace

uint64_t process_offsets::get(const std::string& id) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto i = next_.find(id);
  return i == next_.end() ? 0 : i->second;
}

void process_offsets::set(const std::string& id, uint64_t offset) {
  std::lock_guard<std::mutex> guard{mtx_};
  next_[id] = offset;
}

/// What process_start, process_write and process_kill answer.
json process_result_schema() {
  return output_schema({{"process_id", {{"type", "string"}}},
                        {"running", {{"type", "boolean"}}},
                        {"output", {{"type", "string"}}},
                        {"next_offset", {{"type", "integer"}}},
                        {"exit_code", {{"type", "integer"}}},
                        {"exit_reason", {{"type", "string"}}}});
}

tool process_start_tool(const toolbox_options& opts) {
  tool t;
  t.name = "process_start";
  t.description = fmt::format(
    "Start a long-running command in the sandbox (a dev server, a REPL, a "
    "watcher, a long build) without waiting for it to end. It runs with "
    "/bin/sh -c in the session's working directory (or `cwd`), with its "
    "stdin open for process_write. The call answers when the process ends, "
    "after `yield_seconds`, or once output came and then paused, with the "
    "output so far (at most {} bytes per call), the process id and the "
    "offset its output continues at; read on with process_write (empty "
    "`text`). The process keeps running until it exits, process_kill ends "
    "it, or the session ends. A server to be reached from outside the "
    "sandbox listens on 127.0.0.1 at the port in $SANDBOX_PORT, the "
    "session's own.",
    opts.output_cap);
  t.input_schema = object_schema(
    {{"command",
      {{"type", "string"},
       {"description", "The shell command line, e.g. \"python3 -m "
                       "http.server 8000\"."}}},
     {"cwd", cwd_schema("the process")},
     {"env", env_schema("this process")},
     {"tty",
      {{"type", "boolean"},
       {"description",
        "Run it on a pseudo-terminal (for programs that want one: a REPL "
        "with line editing, an interactive installer, a full-screen tool): "
        "its output is then one stream, as a terminal shows it (CR LF line "
        "ends, echo of what process_write types, escape sequences), and "
        "\"\\u0003\" written with process_write is ^C."}}},
     {"rows", terminal_side_schema("Rows", 24)},
     {"cols", terminal_side_schema("Columns", 80)},
     {"yield_seconds", yield_schema(10)}},
    {"command"});
  t.title = "Start a process";
  t.output_schema = process_result_schema();
  t.annotations = hints(false, true, false, true);
  return t;
}

tool process_write_tool(const toolbox_options& opts) {
  tool t;
  t.name = "process_write";
  t.description = fmt::format(
    "Write text to the stdin of a process process_start started (a line "
    "for a REPL: end it with \"\\n\"), then answer with its output since "
    "the previous call (or since `from_offset`), like process_start: when "
    "it ends, after `yield_seconds`, or once output came and paused; at "
    "most {} bytes per call. Empty `text` only reads. `close_stdin` sends "
    "end of file after the text.",
    opts.output_cap);
  t.input_schema = object_schema(
    {{"process_id", process_id_schema()},
     {"text",
      {{"type", "string"},
       {"description", "Bytes to write to its stdin, as typed; may be "
                       "empty."}}},
     {"close_stdin",
      {{"type", "boolean"},
       {"description", "Close its stdin after the text (end of file)."}}},
     {"from_offset",
      {{"type", "integer"},
       {"minimum", 0},
       {"description", "Read its output from this offset instead of "
                       "where the previous call left off."}}},
     {"yield_seconds", yield_schema(2)}},
    {"process_id"});
  t.title = "Write to a process and read its output";
  t.output_schema = process_result_schema();
  t.annotations = hints(false, true, false, true);
  return t;
}

tool process_kill_tool() {
  tool t;
  t.name = "process_kill";
  t.description
    = "Send a signal to a process process_start started (it and every "
      "process it started) and answer with its exit status once it has "
      "ended (up to 5 s; it may still run after that if it ignores the "
      "signal).";
  t.input_schema
    = object_schema({{"process_id", process_id_schema()},
                     {"signal",
                      {{"type", "string"},
                       {"enum", {"TERM", "KILL", "INT", "HUP"}},
                       {"description", "The signal (default TERM)."}}}},
                    {"process_id"});
  t.title = "Signal a process";
  t.output_schema = process_result_schema();
  t.annotations = hints(false, true, true, false);
  return t;
}

tool process_list_tool() {
  tool t;
  t.name = "process_list";
  t.description
    = "List the processes process_start started in this session, running "
      "and exited: id, command, whether it runs, its exit status, and the "
      "offset its output has reached.";
  t.input_schema = object_schema(json::object());
  t.title = "List processes";
  t.output_schema = output_schema({{"processes", {{"type", "array"}}}});
  t.annotations = hints(true, false, true, false);
  return t;
}

tool_result call_process_start(blocking_session& session,
                               const toolbox_options& opts,
                               process_offsets& offsets, const json& args) {
  process_options popts;
  popts.open_stdin = true;
  read_cwd_and_env(args, popts.exec);
  popts.tty = args.value("tty", false);
  popts.rows = args.value("rows", uint16_t{24});
  popts.cols = args.value("cols", uint16_t{80});
  auto p = session.start_process(args.at("command").get<std::string>(), popts);
  if (!p)
    return tool_failure(to_string(p.error().code), p.error().message);
  return collect(session, opts, offsets, p->id, 0, yield_of(args, 10));
}

tool_result call_process_write(blocking_session& session,
                               const toolbox_options& opts,
                               process_offsets& offsets, const json& args) {
  auto id = args.at("process_id").get<std::string>();
  auto text = args.value("text", std::string{});
  if (!text.empty())
    if (auto w = session.write_process(id, std::move(text)); !w)
      return tool_failure(to_string(w.error().code), w.error().message);
  if (args.value("close_stdin", false))
    if (auto c = session.close_process_stdin(id); !c)
      return tool_failure(to_string(c.error().code), c.error().message);
  auto from = args.contains("from_offset")
                ? args.at("from_offset").get<uint64_t>()
                : offsets.get(id);
  return collect(session, opts, offsets, id, from, yield_of(args, 2));
}

tool_result call_process_kill(blocking_session& session, const json& args) {
  auto id = args.at("process_id").get<std::string>();
  auto name = args.value("signal", std::string{"TERM"});
  auto sig = parse_signal(name);
  if (!sig)
    return tool_failure(to_string(sig.error().code), sig.error().message);
  if (auto k = session.kill_process(id, *sig); !k)
    return tool_failure(to_string(k.error().code), k.error().message);
  auto info = session.wait_process(id, std::chrono::seconds{5});
  if (!info)
    return tool_failure(to_string(info.error().code), info.error().message);
  tool_result res;
  res.text = status_line(id, info->running, false, info->exit_code,
                         info->reason, info->next_offset)
             + "\n";
  res.structured = {{"process_id", id}, {"running", info->running}};
  if (!info->running) {
    res.structured["exit_code"] = info->exit_code;
    res.structured["exit_reason"] = to_string(info->reason);
  }
  return res;
}

tool_result call_process_list(blocking_session& session) {
  auto l = session.processes();
  if (!l)
    return tool_failure(to_string(l.error().code), l.error().message);
  tool_result res;
  auto list = json::array();
  for (auto& p : *l) {
    res.text += fmt::format("{} {} {}\n", p.id,
                            p.running ? std::string{"running"}
                                      : fmt::format("exited {}", p.exit_code),
                            to_valid_utf8(p.command));
    json item = {{"id", p.id},
                 {"command", to_valid_utf8(p.command)},
                 {"pid", p.pid},
                 {"state", p.running ? "running" : "exited"},
                 {"tty", p.tty},
                 {"next_offset", p.next_offset},
                 {"retained_from", p.retained_from}};
    if (!p.running) {
      item["exit_code"] = p.exit_code;
      item["exit_reason"] = to_string(p.reason);
    }
    list.push_back(std::move(item));
  }
  if (l->empty())
    res.text = "no processes\n";
  res.structured = {{"processes", std::move(list)}};
  return res;
}

} // namespace sandbox::actors::detail
