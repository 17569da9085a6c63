// The process routes of the JSON API (docs/http.md, "Processes"): start,
// list, read output from an offset with a wait, write stdin, signal,
// resize (docs/processes.md has the model).

#include <caf/send.hpp>
#include <fmt/format.h>

#include "api.hpp"
#include "ask.hpp"
#include "sandbox/validation.hpp"

namespace sandbox::http {

namespace {

void reply_ok(const exchange_ptr& ex) {
  ex->reply(status::ok, {{"type", "ok"}});
}

json output_json(const actors::process_output& out) {
  auto chunks = json::array();
  auto at = out.offset;
  for (auto& c : out.chunks) {
    json j{{"stream", to_string(c.stream)}, {"offset", at}};
    wire::put_bytes(j, c.data);
    chunks.push_back(std::move(j));
    at += c.data.size();
  }
  json j{{"type", "output"},
         {"offset", out.offset},
         {"next_offset", out.next_offset},
         {"gap", out.gap},
         {"running", out.running}};
  if (!out.running) {
    j["exit_code"] = out.exit_code;
    j["exit_reason"] = std::string{to_string(out.reason)};
  }
  j["chunks"] = std::move(chunks);
  return j;
}

/// A query parameter as a number within [lo, hi] (fractions allowed).
std::optional<double> query_real(const exchange_ptr& ex,
                                 const std::string& name, double dflt,
                                 double lo, double hi) {
  auto& q = ex->head().query;
  auto i = q.find(name);
  if (i == q.end())
    return dflt;
  char* end = nullptr;
  auto v = std::strtod(i->second.c_str(), &end);
  if (i->second.empty() || *end != '\0' || !(v >= lo && v <= hi)) {
    ex->fail(status::bad_request, "invalid_argument",
             fmt::format("query parameter {} must be a number from {} to {}, "
                         "got {}",
                         name, lo, hi, quote_for_message(i->second)));
    return std::nullopt;
  }
  return v;
}

void start_process(api_context& api, const exchange_ptr& ex,
                   const std::string& session_id,
                   const actors::session_actor& s) {
  api.read_json(ex, [&api, ex, session_id, s](json body) {
    members m{body};
    auto command = m.string("command", true);
    actors::process_options opts;
    opts.exec = exec_options_of(m);
    if (auto in = m.boolean("stdin"))
      opts.open_stdin = *in;
    if (auto r = m.number("retain", 0, actors::max_process_retain))
      opts.retain = static_cast<uint64_t>(*r);
    if (auto t = m.boolean("tty"))
      opts.tty = *t;
    if (auto r = m.number("rows", 1, actors::max_terminal_side))
      opts.rows = static_cast<uint16_t>(*r);
    if (auto c = m.number("cols", 1, actors::max_terminal_side))
      opts.cols = static_cast<uint16_t>(*c);
    if (!members_ok(ex, m))
      return;
    ask(
      api.sys, ex, s,
      [ex, session_id](actors::process_info& p) {
        ex->reply(status::created, wire::process_json(p, session_id),
                  {{"Location", fmt::format("/v1/sessions/{}/processes/{}",
                                            session_id, p.id)}});
      },
      actors::proc_start_atom_v, std::move(*command), std::move(opts));
  });
}

/// Writes the body to the process's stdin piece by piece, each write
/// answered before the next piece is read; with `?eof=1` closes it after.
void write_stdin(api_context& api, const exchange_ptr& ex,
                 const actors::session_actor& s, const std::string& pid) {
  auto& q = ex->head().query;
  auto eof = q.find("eof");
  bool close = eof != q.end() && (eof->second == "1" || eof->second == "true");
  if (eof != q.end() && !close && eof->second != "0" && eof->second != "false")
    return ex->fail(status::bad_request, "invalid_argument",
                    fmt::format("query parameter eof must be 1 or 0, got {}",
                                quote_for_message(eof->second)));
  auto failed = std::make_shared<bool>(false);
  ex->stream_body(
    [&api, ex, s, pid, failed](std::string piece, std::function<void()> next) {
      ask(
        api.sys, s, [next](actors::ok_atom) { next(); },
        [ex, failed](const sandbox::error& err) {
          *failed = true;
          ex->fail(err);
        },
        actors::stdin_atom_v, pid, std::move(piece));
    },
    [&api, ex, s, pid, close] {
      if (!close)
        return reply_ok(ex);
      ask(
        api.sys, ex, s, [ex](actors::ok_atom) { reply_ok(ex); },
        actors::close_atom_v, pid);
    });
}

} // namespace

void route_processes(api_context& api, const exchange_ptr& ex,
                     const std::string& session_id,
                     const actors::session_actor& s) {
  auto& seg = ex->head().segments;
  auto method = ex->head().method;
  if (seg.size() == 4) {
    if (method == verb::get)
      return ask(
        api.sys, ex, s,
        [ex, session_id](std::vector<actors::process_info>& list) {
          auto out = json::array();
          for (auto& p : list)
            out.push_back(wire::process_json(p, session_id));
          ex->reply(status::ok,
                    {{"type", "processes"}, {"processes", std::move(out)}});
        },
        actors::proc_list_atom_v);
    if (method == verb::post)
      return start_process(api, ex, session_id, s);
    return method_not_allowed(ex, "GET, POST");
  }
  if (seg.size() != 6)
    return ex->fail(status::not_found, "not_found",
                    fmt::format("no route {}",
                                quote_for_message(ex->head().target)));
  auto& pid = seg[4];
  auto& what = seg[5];
  if (what == "output") {
    if (method != verb::get)
      return method_not_allowed(ex, "GET");
    auto& q = ex->head().query;
    uint64_t offset = 0;
    if (auto i = q.find("offset"); i != q.end()) {
      auto o = query_real(ex, "offset", 0, 0, 9e15);
      if (!o)
        return;
      offset = static_cast<uint64_t>(*o);
    }
    auto wait = query_real(ex, "wait", 0, 0,
                           actors::max_process_wait_ms / 1000);
    if (!wait)
      return;
    auto max = query_real(ex, "max", actors::default_process_retain, 1,
                          actors::max_process_retain);
    if (!max)
      return;
    return ask(
      api.sys, ex, s,
      [ex](actors::process_output& out) {
        ex->reply(status::ok, output_json(out));
      },
      actors::proc_read_atom_v, pid, offset,
      static_cast<uint32_t>(*wait * 1000), static_cast<uint64_t>(*max));
  }
  if (method != verb::post)
    return method_not_allowed(ex, "POST");
  if (what == "stdin")
    return write_stdin(api, ex, s, pid);
  if (what == "signal")
    return api.read_json(ex, [&api, ex, s, pid](json body) {
      int sig = SIGTERM;
      auto i = body.find("signal");
      if (i != body.end() && i->is_number_integer()) {
        sig = i->get<int>();
        if (sig < 0 || sig > SIGRTMAX)
          return ex->fail(status::bad_request, "invalid_argument",
                          fmt::format("member \"signal\" must be a signal "
                                      "name or a number up to {}, got {}",
                                      SIGRTMAX, sig));
      } else if (i != body.end() && i->is_string()) {
        auto parsed = parse_signal(i->get<std::string>());
        if (!parsed)
          return ex->fail(status::bad_request, "invalid_argument",
                          "member \"signal\": " + parsed.error().message);
        sig = *parsed;
      } else if (i != body.end()) {
        return ex->fail(status::bad_request, "invalid_argument",
                        "member \"signal\" must be a name or a number");
      }
      for (auto& [k, v] : body.items())
        if (k != "signal")
          return ex->fail(status::bad_request, "invalid_argument",
                          fmt::format("unknown member {}",
                                      quote_for_message(k)));
      ask(
        api.sys, ex, s, [ex](actors::ok_atom) { reply_ok(ex); },
        actors::kill_atom_v, pid, static_cast<int32_t>(sig));
    });
  if (what == "resize")
    return api.read_json(ex, [&api, ex, s, pid](json body) {
      members m{body};
      auto rows = m.number("rows", 1, actors::max_terminal_side);
      auto cols = m.number("cols", 1, actors::max_terminal_side);
      if (!members_ok(ex, m))
        return;
      if (!rows || !cols)
        return ex->fail(status::bad_request, "invalid_argument",
                        "resize needs members \"rows\" and \"cols\"");
      ask(
        api.sys, ex, s, [ex](actors::ok_atom) { reply_ok(ex); },
        actors::resize_atom_v, pid, static_cast<uint16_t>(*rows),
        static_cast<uint16_t>(*cols));
    });
  ex->fail(status::not_found, "not_found",
           fmt::format("no route {}", quote_for_message(ex->head().target)));
}

} // namespace sandbox::http
