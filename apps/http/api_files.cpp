// The file routes of the JSON API (docs/http.md, "Files"): a file's bytes
// in and out, streamed; its metadata; a listing as NDJSON.

#include <mutex>

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <fmt/format.h>

#include "api.hpp"
#include "ask.hpp"
#include "sandbox/validation.hpp"
#include "sink.hpp"

namespace sandbox::http {

namespace {

/// How deep a listing may go.
constexpr uint32_t max_list_depth = 64;

/// The path after `/v1/sessions/ID/KIND/`: its segments joined again, so
/// that `files//tmp/x` names the absolute path /tmp/x.
std::string path_of(const request_head& h) {
  std::string out;
  for (size_t i = 4; i < h.segments.size(); ++i) {
    if (i > 4)
      out += '/';
    out += h.segments[i];
  }
  if (h.trailing_slash && h.segments.size() > 4)
    out += '/';
  return out;
}

std::string etag(const std::string& version) {
  return "\"" + version + "\"";
}

/// A failed CAS write: the precondition the request gave did not hold.
void fail_write(const exchange_ptr& ex, const sandbox::error& err) {
  if (err.code == errc::conflict)
    return ex->fail(status::precondition_failed, "precondition_failed",
                    err.message);
  ex->fail(err);
}

/// A query parameter as an unsigned number within [lo, hi].
std::optional<uint64_t> query_number(const exchange_ptr& ex,
                                     const std::string& name, uint64_t dflt,
                                     uint64_t lo, uint64_t hi) {
  auto& q = ex->head().query;
  auto i = q.find(name);
  if (i == q.end())
    return dflt;
  auto& text = i->second;
  uint64_t v = 0;
  bool ok = !text.empty() && text.size() <= 19
            && text.find_first_not_of("0123456789") == std::string::npos;
  if (ok)
    v = std::stoull(text);
  if (!ok || v < lo || v > hi) {
    ex->fail(status::bad_request, "invalid_argument",
             fmt::format("query parameter {} must be a whole number from {} "
                         "to {}, got {}",
                         name, lo, hi, quote_for_message(text)));
    return std::nullopt;
  }
  return v;
}

// -- GET: the bytes
// -------------------------------------------------------------

void get_file(api_context& api, const exchange_ptr& ex,
              const actors::filesystem_actor& fs, const std::string& path) {
  auto& q = ex->head().query;
  bool lines = q.count("start_line") > 0 || q.count("end_line") > 0;
  auto start = query_number(ex, "start_line", 1, 1, UINT64_MAX >> 1);
  if (!start)
    return;
  auto end = query_number(ex, "end_line", 0, 0, UINT64_MAX >> 1);
  if (!end)
    return;
  // The ETag is the version the file had when its read started.
  ask(
    api.sys, ex, fs,
    [&api, ex, fs, path, lines, start = *start, end = *end](fs::file_stat& st) {
      fields tag{{"ETag", etag(st.version)}};
      if (lines)
        return ask(
          api.sys, ex, fs,
          [ex, tag](std::string& text) {
            ex->reply_bytes(status::ok, "application/octet-stream",
                            std::move(text), tag);
          },
          actors::read_text_atom_v, path, start, end);
      auto sink = spawn_sink(api.sys, ex, "application/octet-stream",
                             api.door.heartbeat, tag);
      ask(
        api.sys, fs,
        [sink](uint64_t) {
          caf::anon_send(sink, actors::end_atom_v, std::string{});
        },
        [sink](const sandbox::error& err) { end_sink(sink, err); },
        actors::read_stream_atom_v, path, uint32_t{0},
        caf::actor_cast<actors::byte_sink>(sink));
    },
    actors::stat_atom_v, path);
}

// -- PUT: an atomic, streamed write
// ---------------------------------------------

struct upload_state {
  exchange_ptr ex;
  actors::filesystem_actor fs;
  std::string path;
  uint64_t id = 0;
  uint64_t bytes = 0;
  bool open = false;
  /// The body's next read; set on the connection's strand, taken here.
  std::mutex mtx;
  std::function<void()> next;
};

/// Opens the write, feeds it the body piece by piece (one in flight),
/// commits it at the body's end and answers with the new version; a client
/// that goes away aborts it (so does this actor's end).
caf::behavior upload(caf::event_based_actor* self, exchange_ptr ex,
                     actors::filesystem_actor fs, std::string path,
                     actors::write_options opts) {
  auto st = std::make_shared<upload_state>();
  st->ex = std::move(ex);
  st->fs = std::move(fs);
  st->path = std::move(path);
  auto me = caf::actor_cast<caf::actor>(self);
  auto failed = [self, st](const caf::error& err) {
    fail_write(st->ex, actors::from_caf(err));
    self->quit();
  };
  self
    ->request(st->fs, caf::infinite, actors::open_write_atom_v, st->path,
              std::move(opts))
    .then(
      [st, me](uint64_t id) {
        st->id = id;
        st->open = true;
        st->ex->on_gone([me] { caf::anon_send(me, actors::abort_atom_v); });
        st->ex->stream_body(
          [st, me](std::string piece, std::function<void()> next) {
            {
              std::lock_guard<std::mutex> guard{st->mtx};
              st->next = std::move(next);
            }
            caf::anon_send(me, actors::chunk_atom_v, std::move(piece));
          },
          [me] { caf::anon_send(me, actors::commit_atom_v); });
      },
      failed);
  return {
    [self, st, failed](actors::chunk_atom, std::string& piece) {
      st->bytes += piece.size();
      self
        ->request(st->fs, caf::infinite, actors::write_atom_v, st->id,
                  std::move(piece))
        .then(
          [st](actors::ack_atom) {
            std::function<void()> next;
            {
              std::lock_guard<std::mutex> guard{st->mtx};
              next = std::move(st->next);
            }
            if (next)
              next();
          },
          failed);
    },
    [self, st, failed](actors::commit_atom) {
      self->request(st->fs, caf::infinite, actors::commit_atom_v, st->id)
        .then(
          [self, st, failed](actors::ok_atom) {
            st->open = false;
            self->request(st->fs, caf::infinite, actors::stat_atom_v, st->path)
              .then(
                [self, st](fs::file_stat& s) {
                  json j{{"type", "written"}};
                  wire::put_path(j, "path", st->path);
                  j["bytes"] = st->bytes;
                  j["version"] = s.version;
                  st->ex->reply(status::ok, j, {{"ETag", etag(s.version)}});
                  self->quit();
                },
                failed);
          },
          failed);
    },
    [self, st](actors::abort_atom) {
      if (st->open)
        self->send(st->fs, actors::abort_atom_v, st->id);
      st->open = false;
      self->quit();
    },
  };
}

/// The CAS precondition of a PUT: `If-Match: "V"` or `If-None-Match: *`.
bool write_options_of(const exchange_ptr& ex, actors::write_options& opts) {
  auto& match = ex->head().header("if-match");
  auto& none = ex->head().header("if-none-match");
  if (!match.empty() && !none.empty()) {
    ex->fail(status::bad_request, "invalid_argument",
             "give If-Match or If-None-Match, not both");
    return false;
  }
  if (!none.empty()) {
    if (none != "*") {
      ex->fail(status::bad_request, "invalid_argument",
               fmt::format("If-None-Match must be *, got {}",
                           quote_for_message(none)));
      return false;
    }
    opts.if_version = std::string{};
    return true;
  }
  if (!match.empty()) {
    std::string v = match;
    if (v.rfind("W/", 0) == 0)
      v.erase(0, 2);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"')
      v = v.substr(1, v.size() - 2);
    if (v.empty() || v == "*") {
      ex->fail(status::bad_request, "invalid_argument",
               fmt::format("If-Match must name a version (\"VERSION\"), got "
                           "{}",
                           quote_for_message(match)));
      return false;
    }
    opts.if_version = v;
  }
  return true;
}

} // namespace

void route_files(api_context& api, const exchange_ptr& ex,
                 const actors::session_actor& s, const std::string& kind) {
  auto path = path_of(ex->head());
  auto method = ex->head().method;
  if (kind == "files") {
    if (path.empty())
      return ex->fail(status::bad_request, "invalid_argument",
                      "the route names no file: /v1/sessions/ID/files/PATH");
    if (method != verb::get && method != verb::put && method != verb::delete_)
      return method_not_allowed(ex, "GET, PUT, DELETE");
  } else if (method != verb::get) {
    return method_not_allowed(ex, "GET");
  }
  if (path.empty())
    path = ".";
  actors::write_options opts;
  if (method == verb::put && !write_options_of(ex, opts))
    return;
  std::optional<uint64_t> depth;
  if (kind == "list"
      && !(depth = query_number(ex, "depth", 1, 0, max_list_depth)))
    return;
  ask(
    api.sys, ex, s,
    [&api, ex, kind, method, path, opts,
     depth](actors::filesystem_actor& fs) mutable {
      if (kind == "stat")
        return ask(
          api.sys, ex, fs,
          [ex, path](fs::file_stat& st) {
            ex->reply(status::ok, wire::stat_json(path, st));
          },
          actors::stat_atom_v, path);
      if (kind == "list") {
        auto sink = spawn_sink(api.sys, ex, "application/x-ndjson",
                               api.door.heartbeat);
        return ask(
          api.sys, fs,
          [sink](actors::list_done& done) {
            std::optional<sandbox::error> err;
            if (done.error)
              err = actors::from_caf(done.error);
            caf::anon_send(sink, actors::end_atom_v,
                           wire::line(wire::done_json(done.count, err)) + "\n");
          },
          [sink](const sandbox::error& err) { end_sink(sink, err); },
          actors::list_atom_v, path, static_cast<uint32_t>(*depth),
          caf::actor_cast<actors::frame_sink>(sink));
      }
      switch (method) {
        case verb::get:
          return get_file(api, ex, fs, path);
        case verb::delete_:
          return ask(
            api.sys, ex, fs,
            [ex, path](actors::ok_atom) {
              json j{{"type", "removed"}};
              wire::put_path(j, "path", path);
              ex->reply(status::ok, j);
            },
            actors::remove_atom_v, path);
        default:
          spawn_anywhere(api.sys, upload, ex, fs, path, std::move(opts));
      }
    },
    actors::files_atom_v);
}

} // namespace sandbox::http
