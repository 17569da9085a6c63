#include "filesystem/writes.hpp"

#include <map>
#include <optional>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/expected.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <fmt/format.h>

#include "caf_error.hpp"
#include "filesystem/jobs.hpp"
#include "sandbox/fs/view.hpp"

namespace sandbox::actors::filesystem {

namespace {

void add_owner(self_ptr self, const caf::actor_addr& owner) {
  if (!owner)
    return;
  if (self->state.owners[owner]++ == 0)
    self->monitor(caf::actor_cast<caf::actor>(owner));
}

/// Forgets the write at `i` (committed, aborted or failed); its writer, if
/// still held, is released on the file pool, then `then()` runs.
template <class Then>
void release(self_ptr self, std::map<uint64_t, write_slot>::iterator i,
             Then then) {
  auto& st = self->state;
  auto owner = i->second.owner;
  std::vector<std::shared_ptr<fs::atomic_writer>> writers;
  if (i->second.writer)
    writers.push_back(std::move(i->second.writer));
  st.writes.erase(i);
  release_writers(self, std::move(writers), std::move(then));
  if (!owner)
    return;
  auto j = st.owners.find(owner);
  if (j != st.owners.end() && --j->second == 0) {
    st.owners.erase(j);
    self->demonitor(owner);
  }
}

/// Answers `rp` with `err` after the jobs queued before: a writer whose
/// release is queued (its opener went away) is gone when the answer says
/// so.
template <class T>
void fail_in_order(self_ptr self, caf::typed_response_promise<T> rp,
                   caf::error err) {
  release_writers(self, {}, [rp, err]() mutable { rp.deliver(err); });
}

caf::error no_such_write(uint64_t id) {
  return caf::make_error(errc::invalid_argument,
                         fmt::format("write #{}: no open write with this id "
                                     "(committed, aborted or never opened)",
                                     id));
}

/// Finds the open write `id` for its next chunk or its commit, or explains
/// why it cannot go on: the session is stopped or no write has this id.
caf::expected<std::map<uint64_t, write_slot>::iterator>
find_write(self_ptr self, uint64_t id) {
  auto& st = self->state;
  if (st.stopped)
    return stopped_error(fmt::format("write #{}", id));
  auto i = st.writes.find(id);
  if (i == st.writes.end())
    return no_such_write(id);
  return i;
}

/// Opens a streamed write of `abs` (on the file pool) for `owner`.
void open_write(self_ptr self, const std::string& path, std::string abs,
                std::optional<std::string> if_version, caf::actor_addr owner,
                caf::typed_response_promise<uint64_t> rp) {
  auto refused = std::make_shared<fs::denial>();
  offload(
    self, fmt::format("write {}", path),
    [abs = std::move(abs), if_version = std::move(if_version),
     view = self->state.view, refused] {
      return view ? view->open_writer(abs, if_version, refused.get())
                  : fs::atomic_writer::open(abs, if_version);
    },
    [self, rp, owner, path, refused](result<fs::atomic_writer> w) mutable {
      report_if_refused(self, refused);
      if (!w) {
        rp.deliver(to_caf(w.error()));
        return;
      }
      auto writer = std::make_shared<fs::atomic_writer>(std::move(*w));
      auto& st = self->state;
      if (st.stopped) {
        // Opened while the stop went through: it ends with the others.
        release_writers(self, {std::move(writer)}, [rp, path]() mutable {
          rp.deliver(stopped_error(fmt::format("write {}", path)));
        });
        return;
      }
      auto id = st.next_write_id++;
      add_owner(self, owner);
      st.writes.emplace(id, write_slot{std::move(writer), owner});
      rp.deliver(id);
    });
}

} // namespace

caf::result<uint64_t> on_open_write(self_ptr self, const std::string& path,
                                    const write_options& opts) {
  auto abs = absolute(self, "write", path);
  if (!abs)
    return to_caf(abs.error());
  // Before the promise, which takes the sender from the message.
  auto owner = caf::actor_cast<caf::actor_addr>(self->current_sender());
  auto rp = self->make_response_promise<uint64_t>();
  open_write(self, path, std::move(*abs), to_std(opts.if_version),
             std::move(owner), rp);
  return rp;
}

caf::result<ack_atom> on_write_chunk(self_ptr self, uint64_t id,
                                     std::string& chunk) {
  auto rp = self->make_response_promise<ack_atom>();
  auto i = find_write(self, id);
  if (!i) {
    fail_in_order(self, rp, std::move(i.error()));
    return rp;
  }
  offload(
    self, fmt::format("write #{}", id),
    [writer = (*i)->second.writer, chunk = std::move(chunk)] {
      return writer->write(chunk);
    },
    [self, rp, id](result<void> ok) mutable {
      if (ok) {
        rp.deliver(ack_atom_v);
        return;
      }
      // The temporary file is incomplete: drop it now rather than on
      // commit, so that the disk space comes back at once.
      auto& st = self->state;
      auto err = to_caf(ok.error());
      if (auto j = st.writes.find(id); j != st.writes.end())
        release(self, j, [rp, err]() mutable { rp.deliver(err); });
      else
        rp.deliver(err);
    });
  return rp;
}

caf::result<ok_atom> on_commit(self_ptr self, uint64_t id) {
  auto rp = self->make_response_promise<ok_atom>();
  auto i = find_write(self, id);
  if (!i) {
    fail_in_order(self, rp, std::move(i.error()));
    return rp;
  }
  auto writer = std::move((*i)->second.writer);
  release(self, *i, [] {});
  offload(
    self, fmt::format("write #{}", id),
    [writer = std::move(writer)] { return writer->commit(); },
    [rp](result<void> ok) mutable {
      if (ok)
        rp.deliver(ok_atom_v);
      else
        rp.deliver(to_caf(ok.error()));
    });
  return rp;
}

caf::result<ok_atom> on_abort(self_ptr self, uint64_t id) {
  auto& st = self->state;
  if (st.stopped)
    return stopped_error(fmt::format("write #{}", id));
  auto rp = self->make_response_promise<ok_atom>();
  if (auto i = st.writes.find(id); i != st.writes.end())
    release(self, i, [rp]() mutable { rp.deliver(ok_atom_v); });
  else
    release_writers(self, {}, [rp]() mutable { rp.deliver(ok_atom_v); });
  return rp;
}

void on_owner_down(self_ptr self, const caf::down_msg& msg) {
  auto& st = self->state;
  std::vector<std::shared_ptr<fs::atomic_writer>> writers;
  for (auto i = st.writes.begin(); i != st.writes.end();) {
    if (i->second.owner == msg.source) {
      writers.push_back(std::move(i->second.writer));
      i = st.writes.erase(i);
    } else {
      ++i;
    }
  }
  st.owners.erase(msg.source);
  release_writers(self, std::move(writers), [] {});
}

std::vector<std::shared_ptr<fs::atomic_writer>> take_writes(self_ptr self) {
  auto& st = self->state;
  for (auto& [addr, n] : st.owners)
    self->demonitor(addr);
  st.owners.clear();
  std::vector<std::shared_ptr<fs::atomic_writer>> writers;
  for (auto& [id, slot] : st.writes)
    writers.push_back(std::move(slot.writer));
  st.writes.clear();
  return writers;
}

} // namespace sandbox::actors::filesystem
