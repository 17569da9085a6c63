#include "filesystem/jobs.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "sandbox/detail/tsan.hpp"
#include "sandbox/fs/acting_as.hpp"
#include "weak_send.hpp"

namespace sandbox::actors::filesystem {

namespace {

/// Drops `x` on a file thread: the last reference to a writer aborts it,
/// which removes its temporary file (blocking I/O, never in an actor).
template <class T>
void drop_on_pool(self_ptr self, T x) {
  boost::asio::post(self->state.rt->file_pool(),
                    [x = std::move(x), ids = self->state.ids]() mutable {
                      // `x` was filled by threads that sent it here
                      // through CAF.
                      sandbox::detail::tsan_acquire_handover();
                      fs::acting_as as{ids};
                      x = T{};
                    });
}

} // namespace

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
       target = weak_self(self, *st.rt), ids = st.ids,
       now = st.rt->actor_turns()]() mutable {
        // The job's inputs came from a caller through CAF; its outputs go
        // back the same way (see sandbox/detail/tsan.hpp).
        sandbox::detail::tsan_acquire_handover();
        {
          fs::acting_as as{ids};
          work();
          // What the job held (an open file, a reader) is released before
          // its caller can see the result, not after.
          work = nullptr;
          refused.clear();
        }
        // The worker takes its turn here (its answer to the caller, its
        // next job).
        send_now_if_alive<filesystem_actor_impl>(now, target, ended_atom_v, id);
      });
    st.refused.clear();
  }
  if (!st.busy && !st.refused.empty()) {
    drop_on_pool(self, std::move(st.refused));
    st.refused.clear();
  }
}

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

} // namespace sandbox::actors::filesystem
