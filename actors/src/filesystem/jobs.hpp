#pragma once

// The job queue of a filesystem worker on the runtime's file pool: one
// blocking operation at a time, in request order (private header of
// actors/src/filesystem/).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "filesystem/worker.hpp"
#include "sandbox/errc.hpp"
#include "sandbox/fs/file_io.hpp"

namespace sandbox::actors::filesystem {

/// Starts the next job unless one runs; refuses every queued job once the
/// session is stopped, except those that release writers.
void pump(self_ptr self);

/// The job `id` is done: its continuation runs, then the next job starts.
void on_job_done(self_ptr self, uint64_t id);

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

} // namespace sandbox::actors::filesystem
