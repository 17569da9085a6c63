#include "sandbox/actors/filesystem.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <fmt/format.h>

#include "caf_error.hpp"
#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/listing.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/fs/stat.hpp"

namespace sandbox::actors {

namespace {

/// Most bytes of frame text in one batch of a listing (a second bound next
/// to `max_list_batch`, for trees with very long names).
constexpr size_t max_list_batch_bytes = 64 * 1024;

/// The file_reader returns at most this much per call anyway.
constexpr size_t max_read_chunk = 1024 * 1024;

/// An open streamed write.
struct write_slot {
  fs::atomic_writer writer;
  /// The actor that opened the write; its termination aborts the write.
  caf::actor_addr owner;
};

/// State of one filesystem worker; owned by the worker actor alone (it
/// runs detached, so only the worker's own thread touches it).
struct filesystem_state {
  static inline const char* name = "sandbox.filesystem";

  /// Absolute; relative paths of requests resolve against it.
  std::string working_directory;
  /// Set by `stop`; every later request fails with `session_stopped`.
  bool stopped = false;
  /// Open streamed writes by id.
  std::map<uint64_t, write_slot> writes;
  uint64_t next_write_id = 1;
  /// How many open writes each owner holds: an owner is monitored once,
  /// while it holds at least one.
  std::map<caf::actor_addr, size_t> owners;
};

using self_ptr = filesystem_actor_impl::stateful_pointer<filesystem_state>;

/// A read stream in progress (R12); owned by the continuation chain of its
/// worker (only the worker's thread touches it).
struct read_job {
  fs::file_reader reader;
  byte_sink sink;
  caf::typed_response_promise<uint64_t> rp;
  size_t chunk_size = 0;
  uint64_t total = 0;
};

/// A listing in progress (R16); owned like `read_job`.
struct list_job {
  fs::tree_walker walker;
  frame_sink sink;
  caf::typed_response_promise<list_done> rp;
  /// The path as the request named it, for messages.
  std::string path;
  uint64_t count = 0;
  /// The error that ended the walk, reported once its frames are acked.
  std::optional<sandbox::error> failure;
};

/// Resolves `path` against the working directory, or explains why the
/// request cannot run: the session is stopped or the path is unusable.
result<std::string> absolute(self_ptr self, std::string_view op,
                             const std::string& path) {
  auto& st = self->state;
  if (st.stopped)
    return error{errc::session_stopped,
                 fmt::format("{} {}: the session is stopped", op, path)};
  if (auto ok = fs::validate_path(path); !ok)
    return error{ok.error().code,
                 fmt::format("{}: {}", op, ok.error().message)};
  return fs::resolve_keeping_slash(st.working_directory, path);
}

/// Runs the one-shot file operation `op` on the absolute form of `path`
/// and makes its outcome the reply: the value (`ok` for an operation that
/// returns none), or the error of resolving `path` or of `op` itself.
template <class F>
auto on_path(self_ptr self, std::string_view verb, const std::string& path,
             F op) {
  using value_type = typename std::decay_t<decltype(op(
    std::declval<const std::string&>()))>::value_type;
  using reply_type
    = std::conditional_t<std::is_void_v<value_type>, ok_atom, value_type>;
  auto abs = absolute(self, verb, path);
  if (!abs)
    return caf::result<reply_type>{to_caf(abs.error())};
  auto outcome = op(*abs);
  if (!outcome)
    return caf::result<reply_type>{to_caf(outcome.error())};
  if constexpr (std::is_void_v<value_type>)
    return caf::result<reply_type>{ok_atom_v};
  else
    return caf::result<reply_type>{std::move(*outcome)};
}

std::optional<std::string> to_std(const caf::optional<std::string>& x) {
  if (x)
    return *x;
  return std::nullopt;
}

/// The error that ends a stream or listing whose sink answered `why`:
/// sandbox errors pass as they are, anything else (a sink that died, a
/// broken link) becomes `aborted`.
caf::error cancelled(self_ptr self, std::string_view what,
                     const caf::error& why) {
  if (why.category() == caf::atom("sandbox"))
    return why;
  return caf::make_error(errc::aborted,
                         fmt::format("{}: cancelled, the consumer failed: {}",
                                     what, self->system().render(why)));
}

// -- streamed writes ----------------------------------------------------------

void add_owner(self_ptr self, const caf::actor_addr& owner) {
  if (!owner)
    return;
  if (self->state.owners[owner]++ == 0)
    self->monitor(caf::actor_cast<caf::actor>(owner));
}

/// Forgets the write at `i` (committed, aborted or failed).
void release(self_ptr self, std::map<uint64_t, write_slot>::iterator i) {
  auto& st = self->state;
  auto owner = i->second.owner;
  st.writes.erase(i);
  if (!owner)
    return;
  auto j = st.owners.find(owner);
  if (j != st.owners.end() && --j->second == 0) {
    st.owners.erase(j);
    self->demonitor(owner);
  }
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

// -- read streams -------------------------------------------------------------

/// Sends the next chunk of `job` and continues once the sink acked it; the
/// promise is the done: the total or the error that ended the stream.
void pump_read(self_ptr self, std::shared_ptr<read_job> job) {
  auto chunk = job->reader.next(job->chunk_size);
  if (!chunk) {
    job->rp.deliver(to_caf(chunk.error()));
    return;
  }
  if (chunk->empty()) {
    job->rp.deliver(job->total);
    return;
  }
  auto n = chunk->size();
  self->request(job->sink, caf::infinite, chunk_atom_v, std::move(*chunk))
    .then(
      [self, job, n](ack_atom) {
        job->total += n;
        if (self->state.stopped) {
          job->rp.deliver(
            stopped_error(fmt::format("read {}", job->reader.path())));
          return;
        }
        pump_read(self, job);
      },
      [self, job](caf::error& err) {
        job->rp.deliver(
          cancelled(self, fmt::format("read {}", job->reader.path()), err));
      });
}

// -- listings -----------------------------------------------------------------

void finish_list(const std::shared_ptr<list_job>& job, caf::error err) {
  job->rp.deliver(list_done{job->count, std::move(err)});
}

/// Walks on until a batch is full, sends it and continues once the sink
/// acked it; the promise is the one done frame.
void pump_list(self_ptr self, std::shared_ptr<list_job> job) {
  std::vector<fs::frame> batch;
  size_t bytes = 0;
  while (!job->failure && batch.size() < max_list_batch
         && bytes < max_list_batch_bytes) {
    auto next = job->walker.next();
    if (!next) {
      job->failure = next.error();
      break;
    }
    if (!*next)
      break;
    bytes += (*next)->path.size() + (*next)->name.size();
    batch.push_back(std::move(**next));
  }
  if (batch.empty()) {
    finish_list(job, job->failure ? to_caf(*job->failure) : caf::error{});
    return;
  }
  auto n = batch.size();
  self->request(job->sink, caf::infinite, frames_atom_v, std::move(batch))
    .then(
      [self, job, n](ack_atom) {
        job->count += n;
        if (self->state.stopped) {
          finish_list(job, stopped_error(fmt::format("list {}", job->path)));
          return;
        }
        pump_list(self, job);
      },
      [self, job](caf::error& err) {
        finish_list(job,
                    cancelled(self, fmt::format("list {}", job->path), err));
      });
}

filesystem_actor_impl::behavior_type
filesystem_behavior(self_ptr self, std::string working_directory) {
  self->state.working_directory = std::move(working_directory);
  // The opener of a write went away: nobody can finish its writes.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    for (auto i = st.writes.begin(); i != st.writes.end();) {
      if (i->second.owner == msg.source)
        i = st.writes.erase(i);
      else
        ++i;
    }
    st.owners.erase(msg.source);
  });
  return {
    [self](read_atom, const std::string& path) -> caf::result<std::string> {
      return on_path(self, "read", path, fs::read_file);
    },
    [self](read_text_atom, const std::string& path, uint64_t start_line,
           uint64_t end_line) -> caf::result<std::string> {
      return on_path(self, "read", path, [=](const std::string& abs) {
        return fs::read_text(abs, start_line, end_line);
      });
    },
    [self](read_stream_atom, const std::string& path, uint32_t chunk_size,
           byte_sink& sink) -> caf::result<uint64_t> {
      auto abs = absolute(self, "read", path);
      if (!abs)
        return to_caf(abs.error());
      if (!sink)
        return caf::make_error(errc::invalid_argument,
                               fmt::format("read {}: no sink", path));
      auto reader = fs::file_reader::open(*abs);
      if (!reader)
        return to_caf(reader.error());
      auto job = std::make_shared<read_job>(
        read_job{std::move(*reader), std::move(sink),
                 self->make_response_promise<uint64_t>(),
                 chunk_size == 0 ? default_read_chunk
                                 : std::min<size_t>(chunk_size, max_read_chunk),
                 0});
      pump_read(self, job);
      return job->rp;
    },
    [self](write_atom, const std::string& path, const std::string& bytes,
           const write_options& opts) -> caf::result<ok_atom> {
      return on_path(self, "write", path, [&](const std::string& abs) {
        return fs::write_file(abs, bytes, to_std(opts.if_version));
      });
    },
    [self](open_write_atom, const std::string& path,
           const write_options& opts) -> caf::result<uint64_t> {
      auto abs = absolute(self, "write", path);
      if (!abs)
        return to_caf(abs.error());
      auto writer = fs::atomic_writer::open(*abs, to_std(opts.if_version));
      if (!writer)
        return to_caf(writer.error());
      auto& st = self->state;
      auto id = st.next_write_id++;
      auto owner = caf::actor_cast<caf::actor_addr>(self->current_sender());
      add_owner(self, owner);
      st.writes.emplace(id, write_slot{std::move(*writer), owner});
      return id;
    },
    [self](write_atom, uint64_t id,
           const std::string& chunk) -> caf::result<ack_atom> {
      auto i = find_write(self, id);
      if (!i)
        return std::move(i.error());
      if (auto ok = (*i)->second.writer.write(chunk); !ok) {
        // The temporary file is incomplete: drop it now rather than on
        // commit, so that the disk space comes back at once.
        release(self, *i);
        return to_caf(ok.error());
      }
      return ack_atom_v;
    },
    [self](commit_atom, uint64_t id) -> caf::result<ok_atom> {
      auto i = find_write(self, id);
      if (!i)
        return std::move(i.error());
      auto committed = (*i)->second.writer.commit();
      release(self, *i);
      if (!committed)
        return to_caf(committed.error());
      return ok_atom_v;
    },
    [self](abort_atom, uint64_t id) -> caf::result<ok_atom> {
      auto& st = self->state;
      if (st.stopped)
        return stopped_error(fmt::format("write #{}", id));
      if (auto i = st.writes.find(id); i != st.writes.end())
        release(self, i);
      return ok_atom_v;
    },
    [self](remove_atom, const std::string& path) -> caf::result<ok_atom> {
      return on_path(self, "remove", path, fs::remove_file);
    },
    [self](list_files_atom,
           const std::string& path) -> caf::result<std::vector<fs::dir_entry>> {
      return on_path(self, "list", path, fs::list_files);
    },
    [self](list_atom, const std::string& path, uint32_t max_depth,
           frame_sink& sink) -> caf::result<list_done> {
      // Every outcome is one done frame, errors included (R16).
      auto abs = absolute(self, "list", path);
      if (!abs)
        return list_done{0, to_caf(abs.error())};
      if (!sink)
        return list_done{
          0, caf::make_error(errc::invalid_argument,
                             fmt::format("list {}: no sink", path))};
      auto walker = fs::tree_walker::open(*abs, max_depth);
      if (!walker)
        return list_done{0, to_caf(walker.error())};
      auto job = std::make_shared<list_job>(list_job{
        std::move(*walker), std::move(sink),
        self->make_response_promise<list_done>(), path, 0, std::nullopt});
      pump_list(self, job);
      return job->rp;
    },
    [self](stat_atom, const std::string& path) -> caf::result<fs::file_stat> {
      return on_path(self, "stat", path, fs::stat_path);
    },
    [self](stop_atom) {
      auto& st = self->state;
      st.stopped = true;
      // Open writes end here: their temporary files go away, their targets
      // stay as they were. Streams and listings end at their next ack.
      for (auto& [addr, n] : st.owners)
        self->demonitor(addr);
      st.owners.clear();
      st.writes.clear();
      return ok_atom_v;
    },
  };
}

} // namespace

filesystem_actor_impl spawn_filesystem(caf::actor_system& sys,
                                       std::string working_directory) {
  return sys.spawn<caf::detached>(filesystem_behavior,
                                  std::move(working_directory));
}

} // namespace sandbox::actors
