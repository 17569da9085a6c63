#include "sink.hpp"

#include <chrono>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "ask.hpp"

namespace sandbox::http {

namespace {

/// Bytes a sink lets wait in its connection's queue before it holds back
/// the ack of a piece: the node sends on while the client keeps up, and a
/// slow client costs the node at most this (plus one piece) per response.
constexpr uint64_t window_bytes = 1u << 20;

struct sink_state {
  exchange_ptr ex;
  std::string content_type;
  fields extra;
  bool started = false;
  /// The client is gone: every later piece is refused.
  bool failed = false;
  /// Bytes handed to the connection and not written yet.
  uint64_t queued = 0;
  /// The ack held back while `queued` is over the window.
  std::optional<caf::response_promise> held;
  /// Something was written since the last heartbeat tick.
  bool spoke = false;

  void begin() {
    if (started)
      return;
    started = true;
    ex->begin(status::ok, content_type, std::move(extra));
  }
};

/// An NDJSON stream silent for `heartbeat` says `{"type":"heartbeat"}`:
/// clients (Node's fetch among them) give up on a body silent for a few
/// minutes, and a command may well be silent longer.
caf::behavior sink_actor(caf::event_based_actor* self, exchange_ptr ex,
                         std::string content_type, fields extra,
                         std::chrono::milliseconds heartbeat) {
  auto st = std::make_shared<sink_state>();
  st->ex = std::move(ex);
  st->content_type = std::move(content_type);
  st->extra = std::move(extra);
  auto me = caf::actor_cast<caf::actor>(self);
  // Queues `bytes`; answers the piece now, or later once the queue has
  // drained below the window.
  auto put = [self, st,
              me](std::string bytes) -> caf::result<actors::ack_atom> {
    if (st->failed)
      return caf::make_error(errc::aborted, "the HTTP client is gone");
    st->begin();
    st->spoke = true;
    auto size = static_cast<uint64_t>(bytes.size());
    st->queued += size;
    st->ex->write(std::move(bytes), [me, size](bool ok) {
      caf::anon_send(me, actors::written_atom_v, ok, size);
    });
    if (st->queued <= window_bytes)
      return actors::ack_atom_v;
    st->held = self->make_response_promise();
    return caf::delegated<actors::ack_atom>{};
  };
  // Written pieces keep their order in the connection's queue: the end
  // goes right after the last piece.
  auto finish = [self](std::function<void()> f) {
    f();
    self->quit();
  };
  if (st->content_type == "application/x-ndjson")
    self->delayed_send(self, heartbeat, actors::timeout_atom_v);
  return {
    [self, st, heartbeat](actors::timeout_atom) {
      if (!st->spoke && !st->failed) {
        st->begin();
        st->ex->write(R"({"type":"heartbeat"})"
                      "\n",
                      nullptr);
      }
      st->spoke = false;
      self->delayed_send(self, heartbeat, actors::timeout_atom_v);
    },
    [put](actors::chunk_atom, output_chunk& c) {
      return put(wire::chunk_line(c));
    },
    [put](actors::chunk_atom, std::string& bytes) {
      return put(std::move(bytes));
    },
    [put](actors::frames_atom, std::vector<fs::frame>& frames) {
      std::string out;
      for (auto& f : frames)
        out += wire::line(wire::frame_json(f)) + "\n";
      return put(std::move(out));
    },
    [st](actors::written_atom, bool ok, uint64_t size) {
      st->queued -= size;
      if (!ok)
        st->failed = true;
      if (st->held && (st->failed || st->queued <= window_bytes)) {
        auto held = std::move(*st->held);
        st->held.reset();
        if (st->failed)
          held.deliver(
            caf::make_error(errc::aborted, "the HTTP client is gone"));
        else
          held.deliver(actors::ack_atom_v);
      }
    },
    [finish, st](actors::end_atom, std::string& tail) {
      finish([st, tail = std::move(tail)]() mutable {
        st->begin();
        if (!tail.empty())
          st->ex->write(std::move(tail), nullptr);
        st->ex->finish();
      });
    },
    [finish, st](actors::end_atom, std::string& code, std::string& message) {
      finish([st, code = std::move(code), message = std::move(message)] {
        errc c = errc::io_error;
        from_string(code, c);
        if (!st->started)
          return st->ex->fail(sandbox::error{c, message});
        if (st->content_type == "application/x-ndjson") {
          st->ex->write(wire::line(wire::error_json(code, message)) + "\n",
                        nullptr);
          st->ex->finish();
          return;
        }
        st->ex->abort();
      });
    },
  };
}

} // namespace

caf::actor spawn_sink(caf::actor_system& sys, exchange_ptr ex,
                      std::string content_type,
                      std::chrono::milliseconds heartbeat, fields extra) {
  return spawn_anywhere(sys, sink_actor, std::move(ex), std::move(content_type),
                        std::move(extra), heartbeat);
}

void end_sink(const caf::actor& sink, const sandbox::error& err) {
  caf::anon_send(sink, actors::end_atom_v, std::string{to_string(err.code)},
                 err.message);
}

} // namespace sandbox::http
