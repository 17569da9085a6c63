#include "sink.hpp"

#include <optional>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

namespace sandbox::http {

namespace {

struct sink_state {
  exchange_ptr ex;
  std::string content_type;
  fields extra;
  bool started = false;
  bool writing = false;
  caf::response_promise ack;
  /// The end, held back while a piece is being written.
  std::optional<std::function<void()>> end;

  void begin() {
    if (started)
      return;
    started = true;
    ex->begin(status::ok, content_type, std::move(extra));
  }
};

caf::behavior sink_actor(caf::event_based_actor* self, exchange_ptr ex,
                         std::string content_type, fields extra) {
  auto st = std::make_shared<sink_state>();
  st->ex = std::move(ex);
  st->content_type = std::move(content_type);
  st->extra = std::move(extra);
  auto put = [self, st](std::string bytes) {
    st->begin();
    st->writing = true;
    st->ack = self->make_response_promise();
    auto me = caf::actor_cast<caf::actor>(self);
    st->ex->write(std::move(bytes), [me](bool ok) {
      caf::anon_send(me, actors::written_atom_v, ok);
    });
  };
  auto end = [self, st](std::function<void()> f) {
    if (st->writing) {
      st->end = std::move(f);
      return;
    }
    f();
    self->quit();
  };
  return {
    [put](actors::chunk_atom, output_chunk& c) {
      put(wire::line(wire::chunk_json(c)) + "\n");
    },
    [put](actors::chunk_atom, std::string& bytes) { put(std::move(bytes)); },
    [put](actors::frames_atom, std::vector<fs::frame>& frames) {
      std::string out;
      for (auto& f : frames)
        out += wire::line(wire::frame_json(f)) + "\n";
      put(std::move(out));
    },
    [self, st](actors::written_atom, bool ok) {
      st->writing = false;
      auto ack = std::move(st->ack);
      if (ok)
        ack.deliver(actors::ack_atom_v);
      else
        ack.deliver(caf::make_error(errc::aborted, "the HTTP client is gone"));
      if (st->end) {
        (*st->end)();
        self->quit();
      }
    },
    [end, st](actors::end_atom, std::string& tail) {
      end([st, tail = std::move(tail)]() mutable {
        st->begin();
        if (!tail.empty())
          st->ex->write(std::move(tail), nullptr);
        st->ex->finish();
      });
    },
    [end, st](actors::end_atom, std::string& code, std::string& message) {
      end([st, code = std::move(code), message = std::move(message)] {
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
                      std::string content_type, fields extra) {
  return sys.spawn(sink_actor, std::move(ex), std::move(content_type),
                   std::move(extra));
}

void end_sink(const caf::actor& sink, const sandbox::error& err) {
  caf::anon_send(sink, actors::end_atom_v, std::string{to_string(err.code)},
                 err.message);
}

} // namespace sandbox::http
