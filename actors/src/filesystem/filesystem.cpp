#include "sandbox/actors/filesystem.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <caf/actor_system.hpp>
#include <caf/expected.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <fmt/format.h>

#include "caf_error.hpp"
#include "handed_out.hpp"
#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/listing.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/fs/stat.hpp"
#include "sandbox/fs/view.hpp"
#include "sandbox/log.hpp"
#include "weak_send.hpp"

namespace sandbox::actors {

namespace {

/// Most bytes of frame text in one batch of a listing (a second bound next
/// to `max_list_batch`, for trees with very long names).
constexpr size_t max_list_batch_bytes = 64 * 1024;

/// The file_reader returns at most this much per call anyway.
constexpr size_t max_read_chunk = 1024 * 1024;

/// An open streamed write. The writer is shared with the file job that
/// writes to it, so that dropping the write (stop, abort, a gone owner)
/// never destroys it under a file thread; the last owner aborts it.
struct write_slot {
  std::shared_ptr<fs::atomic_writer> writer;
  /// The actor that opened the write; its termination aborts the write.
  caf::actor_addr owner;
};

/// One piece of blocking file I/O of a worker: `work` runs on a thread of
/// the runtime's file pool and touches nothing of the actor; `then` runs in
/// the worker once `work` is done (`ran`), or instead of it when the
/// session stopped before its turn came (`!ran`).
struct file_job {
  uint64_t id = 0;
  std::function<void()> work;
  std::function<void(bool ran)> then;
  /// Runs after the stop too (releasing writers).
  bool always = false;
};

/// State of one filesystem worker; owned by the worker actor alone. File
/// threads never touch it: they get a job's inputs and hand back its
/// outcome in a message.
struct filesystem_state {
  static inline const char* name = "sandbox.filesystem";

  /// The file pool (shared by every session of the node).
  runtime_ptr rt;
  /// Absolute; relative paths of requests resolve against it.
  std::string working_directory;
  /// A contained session's view (none otherwise): every path is resolved
  /// and checked in the session's mount namespace. Dropped at the stop.
  std::shared_ptr<const fs::session_view> view;
  /// The session, told the violations (weak: it holds the worker).
  caf::actor_addr session;
  /// Set by `stop`; every later request fails with `session_stopped`.
  bool stopped = false;
  /// Open streamed writes by id.
  std::map<uint64_t, write_slot> writes;
  uint64_t next_write_id = 1;
  /// How many open writes each owner holds: an owner is monitored once,
  /// while it holds at least one.
  std::map<caf::actor_addr, size_t> owners;
  /// File jobs in request order; the front one runs when `busy`. One job at
  /// a time: the operations of a session happen in the order they were
  /// asked for, as on a thread of its own.
  std::deque<file_job> jobs;
  bool busy = false;
  uint64_t next_job = 0;
  /// What refused jobs held (a writer to commit, a chunk), released on the
  /// file pool with the next job that runs.
  std::vector<std::function<void()>> refused;
  /// Read streams and listings not yet done.
  size_t streams = 0;
};

using self_ptr = filesystem_actor_impl::stateful_pointer<filesystem_state>;

/// A contained session's file operation was refused: a violation (kind
/// `read_denied` or `write_denied`, detail the path). The one place that
/// reports it; the operation's reply is the `permission_denied` error.
/// A refused file operation is a violation of the session (execution 0:
/// no command caused it).
void report_violation(self_ptr self, const fs::denial& d) {
  auto kind = d.kind == fs::denial::write_denied ? violation_kind::write_denied
                                                 : violation_kind::read_denied;
  if (auto session = caf::actor_cast<session_actor_impl>(self->state.session))
    self->send(session, violations_atom_v,
               std::vector<violation>{violation{kind, 0, d.path}});
}

/// Where a job on the file pool stores a refusal, for the worker to report
/// once the job is done.
using refusal = std::shared_ptr<fs::denial>;

void report_if_refused(self_ptr self, const refusal& r) {
  if (r && !r->path.empty())
    report_violation(self, *r);
}

// -- file jobs ----------------------------------------------------------------

/// Drops `x` on a file thread: the last reference to a writer aborts it,
/// which removes its temporary file (blocking I/O, never in an actor).
template <class T>
void drop_on_pool(self_ptr self, T x) {
  boost::asio::post(self->state.rt->file_pool(), [x = std::move(x)] {
    // `x` was filled by threads that sent it here through CAF.
    sandbox::detail::tsan_acquire_handover();
  });
}

/// Starts the next job unless one runs; refuses every queued job once the
/// session is stopped, except those that release writers.
void pump(self_ptr self) {
  auto& st = self->state;
  while (!st.busy && !st.jobs.empty()) {
    if (st.stopped && !st.jobs.front().always) {
      auto job = std::move(st.jobs.front());
      st.jobs.pop_front();
      st.refused.push_back(std::move(job.work));
      job.then(false);
      continue;
    }
    st.busy = true;
    auto& job = st.jobs.front();
    boost::asio::post(
      st.rt->file_pool(),
      [work = std::move(job.work), id = job.id, refused = std::move(st.refused),
       target = weak_self(self, *st.rt)]() mutable {
        // The job's inputs came from a caller through CAF; its outputs go
        // back the same way (see sandbox/detail/tsan.hpp).
        sandbox::detail::tsan_acquire_handover();
        work();
        // What the job held (an open file, a reader) is released before
        // its caller can see the result, not after.
        work = nullptr;
        refused.clear();
        sandbox::detail::tsan_release_handover();
        send_if_alive<filesystem_actor_impl>(target, ended_atom_v, id);
      });
    st.refused.clear();
  }
  if (!st.busy && !st.refused.empty()) {
    drop_on_pool(self, std::move(st.refused));
    st.refused.clear();
  }
}

/// Queues `work()` (blocking, returning a `sandbox::result`) for the file
/// pool and calls `then` with its outcome in the worker; when the session
/// stops before the job's turn, `then` gets `session_stopped` naming
/// `what` instead.
template <class Work, class Then>
void offload(self_ptr self, std::string what, Work work, Then then) {
  using outcome = decltype(work());
  auto& st = self->state;
  auto out = std::make_shared<std::optional<outcome>>();
  file_job job;
  job.id = ++st.next_job;
  job.work = [out, work = std::move(work)]() mutable { out->emplace(work()); };
  job.then = [out, what = std::move(what),
              then = std::move(then)](bool ran) mutable {
    if (ran && out->has_value())
      then(std::move(**out));
    else
      then(outcome{error{errc::session_stopped,
                         fmt::format("{}: the session is stopped", what)}});
  };
  st.jobs.push_back(std::move(job));
  pump(self);
}

/// Queues the release of `writers` (the last references abort them,
/// which removes their temporary files) and then `then()`, in request order
/// and after the stop too: whoever gets an answer after it finds the
/// writers gone.
template <class Then>
void release_writers(self_ptr self,
                     std::vector<std::shared_ptr<fs::atomic_writer>> writers,
                     Then then) {
  auto& st = self->state;
  if (writers.empty() && !st.busy && st.jobs.empty()) {
    then();
    return;
  }
  file_job job;
  job.id = ++st.next_job;
  job.always = true;
  job.work = [w = std::move(writers)]() mutable { w.clear(); };
  job.then = [then = std::move(then)](bool) mutable { then(); };
  st.jobs.push_back(std::move(job));
  pump(self);
}

/// A worker whose handle went out over the network quits once it is
/// stopped and idle (see `handed_out`); a local one lives on, answering
/// `session_stopped`, until its last handle is dropped.
void maybe_quit(self_ptr self) {
  auto& st = self->state;
  if (st.stopped && !st.busy && st.jobs.empty() && st.streams == 0
      && handed_out(self))
    self->quit();
}

/// The job `id` is done: its continuation runs, then the next job starts.
void on_job_done(self_ptr self, uint64_t id) {
  auto& st = self->state;
  if (!st.busy || st.jobs.empty() || st.jobs.front().id != id)
    return;
  auto job = std::move(st.jobs.front());
  st.jobs.pop_front();
  st.busy = false;
  job.then(true);
  pump(self);
  maybe_quit(self);
}

/// A read stream in progress (§12); owned by the continuation chain of its
/// worker. The reader is shared with the file job that reads the next
/// chunk.
struct read_job {
  std::shared_ptr<fs::file_reader> reader;
  byte_sink sink;
  caf::typed_response_promise<uint64_t> rp;
  /// Absolute, for messages.
  std::string path;
  size_t chunk_size = 0;
  uint64_t total = 0;
};

/// A listing in progress (§16); owned like `read_job`.
struct list_job {
  std::shared_ptr<fs::tree_walker> walker;
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

/// Runs the one-shot file operation `op` on the absolute form of `path` on
/// the file pool and makes its outcome the reply: the value (`ok` for an
/// operation that returns none), or the error of resolving `path` or of
/// `op` itself.
template <class F>
auto on_path(self_ptr self, std::string_view verb, const std::string& path,
             F op) {
  using value_type = typename std::decay_t<decltype(op(
    std::declval<const std::string&>(),
    std::declval<fs::denial*>()))>::value_type;
  using reply_type
    = std::conditional_t<std::is_void_v<value_type>, ok_atom, value_type>;
  auto abs = absolute(self, verb, path);
  if (!abs)
    return caf::result<reply_type>{to_caf(abs.error())};
  auto rp = self->make_response_promise<reply_type>();
  auto refused = std::make_shared<fs::denial>();
  offload(
    self, fmt::format("{} {}", verb, path),
    [op = std::move(op), abs = std::move(*abs), refused] {
      return op(abs, refused.get());
    },
    [self, rp, refused](auto outcome) mutable {
      report_if_refused(self, refused);
      if (!outcome)
        rp.deliver(to_caf(outcome.error()));
      else if constexpr (std::is_void_v<value_type>)
        rp.deliver(ok_atom_v);
      else
        rp.deliver(std::move(*outcome));
    });
  return caf::result<reply_type>{rp};
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

// -- read streams -------------------------------------------------------------

void end_stream(self_ptr self) {
  --self->state.streams;
  maybe_quit(self);
}

/// Reads the next chunk of `job` on the file pool, sends it and continues
/// once the sink acked it; the promise is the done: the total or the error
/// that ended the stream.
void pump_read(self_ptr self, std::shared_ptr<read_job> job) {
  offload(
    self, fmt::format("read {}", job->path),
    [reader = job->reader, n = job->chunk_size] { return reader->next(n); },
    [self, job](result<std::string> chunk) {
      if (!chunk) {
        job->rp.deliver(to_caf(chunk.error()));
        end_stream(self);
        return;
      }
      if (chunk->empty()) {
        job->rp.deliver(job->total);
        end_stream(self);
        return;
      }
      auto n = chunk->size();
      self->request(job->sink, caf::infinite, chunk_atom_v, std::move(*chunk))
        .then(
          [self, job, n](ack_atom) {
            job->total += n;
            if (self->state.stopped) {
              job->rp.deliver(stopped_error(fmt::format("read {}", job->path)));
              end_stream(self);
              return;
            }
            pump_read(self, job);
          },
          [self, job](caf::error& err) {
            job->rp.deliver(
              cancelled(self, fmt::format("read {}", job->path), err));
            end_stream(self);
          });
    });
}

// -- listings -----------------------------------------------------------------

/// Frames of one batch, and the error that ended the walk in it.
struct list_batch {
  std::vector<fs::frame> frames;
  std::optional<sandbox::error> failure;
};

void finish_list(self_ptr self, const std::shared_ptr<list_job>& job,
                 caf::error err) {
  job->rp.deliver(list_done{job->count, std::move(err)});
  end_stream(self);
}

/// Walks on (on the file pool) until a batch is full, sends it and
/// continues once the sink acked it; the promise is the one done frame.
void pump_list(self_ptr self, std::shared_ptr<list_job> job) {
  if (job->failure) {
    finish_list(self, job, to_caf(*job->failure));
    return;
  }
  offload(
    self, fmt::format("list {}", job->path),
    [walker = job->walker]() -> result<list_batch> {
      list_batch batch;
      size_t bytes = 0;
      while (batch.frames.size() < max_list_batch
             && bytes < max_list_batch_bytes) {
        auto next = walker->next();
        if (!next) {
          batch.failure = next.error();
          break;
        }
        if (!*next)
          break;
        bytes += (*next)->path.size() + (*next)->name.size();
        batch.frames.push_back(std::move(**next));
      }
      return batch;
    },
    [self, job](result<list_batch> batch) {
      if (!batch) {
        finish_list(self, job, to_caf(batch.error()));
        return;
      }
      job->failure = std::move(batch->failure);
      if (batch->frames.empty()) {
        finish_list(self, job,
                    job->failure ? to_caf(*job->failure) : caf::error{});
        return;
      }
      auto n = batch->frames.size();
      self
        ->request(job->sink, caf::infinite, frames_atom_v,
                  std::move(batch->frames))
        .then(
          [self, job, n](ack_atom) {
            job->count += n;
            if (self->state.stopped) {
              finish_list(self, job,
                          stopped_error(fmt::format("list {}", job->path)));
              return;
            }
            pump_list(self, job);
          },
          [self, job](caf::error& err) {
            finish_list(self, job,
                        cancelled(self, fmt::format("list {}", job->path),
                                  err));
          });
    });
}

filesystem_actor_impl::behavior_type
filesystem_behavior(self_ptr self, runtime_ptr rt,
                    std::string working_directory,
                    std::shared_ptr<const fs::session_view> view,
                    caf::actor_addr session) {
  self->state.rt = std::move(rt);
  self->state.session = std::move(session);
  self->state.working_directory = std::move(working_directory);
  self->state.view = std::move(view);
  // The opener of a write went away: nobody can finish its writes.
  self->set_down_handler([self](caf::down_msg& msg) {
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
  });
  return {
    [self](read_atom, const std::string& path) -> caf::result<std::string> {
      return on_path(
        self, "read", path,
        [view = self->state.view](const std::string& abs, fs::denial* d) {
          return view ? view->read_file(abs, d) : fs::read_file(abs);
        });
    },
    [self](read_text_atom, const std::string& path, uint64_t start_line,
           uint64_t end_line) -> caf::result<std::string> {
      return on_path(
        self, "read", path,
        [=, view = self->state.view](const std::string& abs, fs::denial* d) {
          return view ? view->read_text(abs, start_line, end_line, d)
                      : fs::read_text(abs, start_line, end_line);
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
      auto job = std::make_shared<read_job>();
      job->sink = std::move(sink);
      job->rp = self->make_response_promise<uint64_t>();
      job->path = *abs;
      job->chunk_size = chunk_size == 0
                          ? default_read_chunk
                          : std::min<size_t>(chunk_size, max_read_chunk);
      ++self->state.streams;
      auto refused = std::make_shared<fs::denial>();
      offload(
        self, fmt::format("read {}", path),
        [abs = *abs, view = self->state.view, refused] {
          return view ? view->open_reader(abs, refused.get())
                      : fs::file_reader::open(abs);
        },
        [self, job, refused](result<fs::file_reader> reader) {
          report_if_refused(self, refused);
          if (!reader) {
            job->rp.deliver(to_caf(reader.error()));
            end_stream(self);
            return;
          }
          job->reader = std::make_shared<fs::file_reader>(std::move(*reader));
          pump_read(self, job);
        });
      return job->rp;
    },
    [self](write_atom, const std::string& path, std::string& bytes,
           const write_options& opts) -> caf::result<ok_atom> {
      return on_path(self, "write", path,
                     [bytes = std::move(bytes), v = to_std(opts.if_version),
                      view = self->state.view](const std::string& abs,
                                               fs::denial* d) {
                       return view ? view->write_file(abs, bytes, v, d)
                                   : fs::write_file(abs, bytes, v);
                     });
    },
    [self](open_write_atom, const std::string& path,
           const write_options& opts) -> caf::result<uint64_t> {
      auto abs = absolute(self, "write", path);
      if (!abs)
        return to_caf(abs.error());
      // Before the promise, which takes the sender from the message.
      auto owner = caf::actor_cast<caf::actor_addr>(self->current_sender());
      auto rp = self->make_response_promise<uint64_t>();
      open_write(self, path, std::move(*abs), to_std(opts.if_version),
                 std::move(owner), rp);
      return rp;
    },
    [self](write_atom, uint64_t id,
           std::string& chunk) -> caf::result<ack_atom> {
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
    },
    [self](commit_atom, uint64_t id) -> caf::result<ok_atom> {
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
    },
    [self](abort_atom, uint64_t id) -> caf::result<ok_atom> {
      auto& st = self->state;
      if (st.stopped)
        return stopped_error(fmt::format("write #{}", id));
      auto rp = self->make_response_promise<ok_atom>();
      if (auto i = st.writes.find(id); i != st.writes.end())
        release(self, i, [rp]() mutable { rp.deliver(ok_atom_v); });
      else
        release_writers(self, {}, [rp]() mutable { rp.deliver(ok_atom_v); });
      return rp;
    },
    [self](remove_atom, const std::string& path) -> caf::result<ok_atom> {
      return on_path(
        self, "remove", path,
        [view = self->state.view](const std::string& abs, fs::denial* d) {
          return view ? view->remove_file(abs, d) : fs::remove_file(abs);
        });
    },
    [self](list_files_atom,
           const std::string& path) -> caf::result<std::vector<fs::dir_entry>> {
      return on_path(
        self, "list", path,
        [view = self->state.view](const std::string& abs, fs::denial* d) {
          return view ? view->list_files(abs, d) : fs::list_files(abs);
        });
    },
    [self](list_atom, const std::string& path, uint32_t max_depth,
           frame_sink& sink) -> caf::result<list_done> {
      // Every outcome is one done frame, errors included (§16).
      auto abs = absolute(self, "list", path);
      if (!abs)
        return list_done{0, to_caf(abs.error())};
      if (!sink)
        return list_done{
          0, caf::make_error(errc::invalid_argument,
                             fmt::format("list {}: no sink", path))};
      auto job = std::make_shared<list_job>();
      job->sink = std::move(sink);
      job->rp = self->make_response_promise<list_done>();
      job->path = path;
      ++self->state.streams;
      auto refused = std::make_shared<fs::denial>();
      offload(
        self, fmt::format("list {}", path),
        [abs = *abs, max_depth, view = self->state.view, refused] {
          return view ? view->open_walker(abs, max_depth, refused.get())
                      : fs::tree_walker::open(abs, max_depth);
        },
        [self, job, refused](result<fs::tree_walker> walker) {
          report_if_refused(self, refused);
          if (!walker) {
            finish_list(self, job, to_caf(walker.error()));
            return;
          }
          job->walker = std::make_shared<fs::tree_walker>(std::move(*walker));
          pump_list(self, job);
        });
      return job->rp;
    },
    [self](stat_atom, const std::string& path) -> caf::result<fs::file_stat> {
      return on_path(self, "stat", path,
                     [view = self->state.view](const std::string& abs,
                                               fs::denial* d) {
                       return view ? view->stat(abs, d) : fs::stat_path(abs);
                     });
    },
    [self](stop_atom) -> caf::result<ok_atom> {
      auto& st = self->state;
      st.stopped = true;
      // The view's root goes with the last job that holds it.
      st.view = nullptr;
      // Open writes end here: their temporary files go away (on the file
      // pool, after the job in flight), their targets stay as they were;
      // the answer comes once they are gone. Queued jobs are refused;
      // streams and listings end at their next ack.
      for (auto& [addr, n] : st.owners)
        self->demonitor(addr);
      st.owners.clear();
      std::vector<std::shared_ptr<fs::atomic_writer>> writers;
      for (auto& [id, slot] : st.writes)
        writers.push_back(std::move(slot.writer));
      st.writes.clear();
      auto rp = self->make_response_promise<ok_atom>();
      release_writers(self, std::move(writers), [self, rp]() mutable {
        rp.deliver(ok_atom_v);
        maybe_quit(self);
      });
      return rp;
    },
    [self](ended_atom, uint64_t id) { on_job_done(self, id); },
  };
}

} // namespace

filesystem_actor_impl
spawn_filesystem(caf::actor_system& sys, runtime_ptr rt,
                 std::string working_directory,
                 std::shared_ptr<const fs::session_view> view,
                 caf::actor_addr session) {
  return sys.spawn(filesystem_behavior, std::move(rt),
                   std::move(working_directory), std::move(view),
                   std::move(session));
}

} // namespace sandbox::actors
