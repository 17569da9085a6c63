#include "filesystem/streams.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <fmt/format.h>

#include "caf_error.hpp"
#include "filesystem/filesystem.hpp"
#include "filesystem/jobs.hpp"
#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/listing.hpp"
#include "sandbox/fs/view.hpp"

namespace sandbox::actors::filesystem {

namespace {

/// Most bytes of frame text in one batch of a listing (a second bound next
/// to `max_list_batch`, for trees with very long names).
constexpr size_t max_list_batch_bytes = 64 * 1024;

/// The file_reader returns at most this much per call anyway.
constexpr size_t max_read_chunk = 1024 * 1024;

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

void end_stream(self_ptr self) {
  --self->state.streams;
  maybe_quit(self);
}

// -- read streams -------------------------------------------------------------

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

} // namespace

caf::result<uint64_t> on_read_stream(self_ptr self, const std::string& path,
                                     uint32_t chunk_size, byte_sink& sink) {
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
}

caf::result<list_done> on_list(self_ptr self, const std::string& path,
                               uint32_t max_depth, frame_sink& sink) {
  auto abs = absolute(self, "list", path);
  if (!abs)
    return list_done{0, to_caf(abs.error())};
  if (!sink)
    return list_done{0, caf::make_error(errc::invalid_argument,
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
}

} // namespace sandbox::actors::filesystem
