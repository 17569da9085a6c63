#include "process/state.hpp"

namespace sandbox::actors::process_detail {

// A remote sink gets at most `remote_in_flight` chunks unacknowledged;
// output arriving meanwhile is joined into chunks of up to `max_joined`
// bytes, so that a round trip over the network carries more than one pipe
// read. Reading pauses once `max_joined` bytes wait: an execution holds at
// most about (remote_in_flight + 1) x max_joined bytes of output for its
// sink (3 MiB), and a slow reader still slows the child. A sink in this
// process gets every piece as it comes (the reader's credit is its ack).
constexpr int remote_in_flight = 2;
constexpr size_t max_joined = size_t{1} << 20;

void grant(self_ptr self, int index) {
  if (self->state.child)
    self->state.child->grant(index == 0 ? stream_kind::out : stream_kind::err);
}

void release_held(self_ptr self) {
  auto& st = self->state;
  for (int i : {0, 1})
    for (; st.held[i] > 0 && st.queued_bytes < max_joined; --st.held[i])
      grant(self, i);
}

/// Sends queued chunks while fewer than `remote_in_flight` are unacked
/// (all of them when `all`: the result is about to go out).
void send_queued(self_ptr self, bool all) {
  auto& st = self->state;
  while (st.p.sink && !st.queued.empty()
         && (all || st.in_flight < remote_in_flight)) {
    auto chunk = std::move(st.queued.front());
    st.queued.pop_front();
    st.queued_bytes -= chunk.data.size();
    ++st.in_flight;
    self->request(st.p.sink, caf::infinite, chunk_atom_v, std::move(chunk))
      .then(
        [self](ack_atom) {
          --self->state.in_flight;
          send_queued(self);
          release_held(self);
        },
        [self](caf::error&) {
          // A sink that went away stops streaming, not the execution.
          auto& st = self->state;
          st.p.sink = nullptr;
          st.queued.clear();
          st.queued_bytes = 0;
          release_held(self);
        });
  }
}

void send_chunk(self_ptr self, stream_kind s, std::string data) {
  auto& st = self->state;
  st.kept[index_of(s)]->append(data);
  if (!st.p.sink) {
    if (st.child)
      st.child->grant(s);
    return;
  }
  if (st.p.sink.node() != self->node()) {
    auto n = data.size();
    if (!st.queued.empty() && st.queued.back().stream == s
        && st.queued.back().data.size() + n <= max_joined)
      st.queued.back().data += data;
    else
      st.queued.push_back(output_chunk{s, std::move(data)});
    st.queued_bytes += n;
    send_queued(self);
    ++st.held[index_of(s)];
    release_held(self);
    return;
  }
  // The sink's ack is the credit for the next read of this stream.
  self
    ->request(st.p.sink, caf::infinite, chunk_atom_v,
              output_chunk{s, std::move(data)})
    .then(
      [self, s](ack_atom) {
        if (self->state.child)
          self->state.child->grant(s);
      },
      [self, s](caf::error&) {
        // A sink that went away stops streaming, not the execution.
        self->state.p.sink = nullptr;
        if (self->state.child)
          self->state.child->grant(s);
      });
}

} // namespace sandbox::actors::process_detail
