#pragma once

// CAF's work-sharing scheduler with a hand-off slot per worker: a message
// that an actor sends to an idle actor from a worker thread makes that
// actor the worker's next job, instead of waking another worker to race
// the sending one for it (CAF's `work_sharing` notifies a sleeping worker
// for every job). An execution's session delegates to its process actor,
// and the process actor reports to the session: each of these hand-overs
// cost a wake-up of the other worker, which usually found the job already
// taken (docs/benchmarks.md, "A hand-off slot per worker").
//
// A job waits in the slot only while the worker finishes the job that
// made it: the worker runs its slot before it looks at the shared queue.
// After `max_slot_runs` slot jobs in a row, the slot goes to the shared
// queue, so two actors that keep messaging each other cannot keep a
// worker from the queue. A handler that blocked its worker until an actor
// it messaged answered would wait forever (that actor sits in the slot);
// no actor of the node waits for an answer inside a handler, and with
// CAF's `sharing` on one worker such a handler would wait forever as well.

#include <mutex>
#include <utility>

#include <caf/policy/work_sharing.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/coordinator.hpp>

namespace sandbox::actors {

/// CAF's `work_sharing` (its shared queue and its wait for work) plus the
/// slot, and a wake-up after the queue's lock is released.
class handoff_policy : public caf::policy::work_sharing {
public:
  /// Slot jobs a worker runs in a row before it takes the queue's first.
  static constexpr unsigned max_slot_runs = 3;

  struct worker_data {
    explicit worker_data(caf::scheduler::abstract_coordinator*) {
    }
    caf::resumable* slot = nullptr;
    unsigned slot_runs = 0;
  };

  /// Queues `job` and wakes a sleeping worker. As CAF's `enqueue`, except
  /// that the worker is woken after the queue's lock is released: CAF's
  /// notifies while it holds the lock, so the woken worker first blocked
  /// on that lock (a futex wait and a wake more, and one more context
  /// switch, per hand-over).
  template <class Coordinator>
  void enqueue(Coordinator* self, caf::resumable* job) {
    queue_type l;
    l.push_back(job);
    auto& data = d(self);
    {
      std::unique_lock<std::mutex> guard(data.lock);
      data.queue.splice(data.queue.end(), l);
    }
    data.cv.notify_one();
  }

  template <class Coordinator>
  void central_enqueue(Coordinator* self, caf::resumable* job) {
    enqueue(self, job);
  }

  template <class Worker>
  void external_enqueue(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }

  template <class Worker>
  void resume_job_later(Worker* self, caf::resumable* job) {
    enqueue(self->parent(), job);
  }

  /// A job made ready by the job this worker runs: the worker's next one.
  /// A job already in the slot goes to the queue: the newest is the one
  /// whose message is still in the cache (as with Tokio's LIFO slot).
  template <class Worker>
  void internal_enqueue(Worker* self, caf::resumable* job) {
    auto& w = d(self);
    if (auto* older = std::exchange(w.slot, job); older != nullptr)
      enqueue(self->parent(), older);
  }

  template <class Worker>
  caf::resumable* dequeue(Worker* self) {
    auto& w = d(self);
    if (w.slot != nullptr) {
      if (w.slot_runs < max_slot_runs) {
        ++w.slot_runs;
        return std::exchange(w.slot, nullptr);
      }
      enqueue(self->parent(), std::exchange(w.slot, nullptr));
    }
    w.slot_runs = 0;
    return work_sharing::dequeue(self);
  }

  /// At shutdown, after the worker's thread ended.
  template <class Worker, class UnaryFunction>
  void foreach_resumable(Worker* self, UnaryFunction f) {
    if (auto* job = std::exchange(d(self).slot, nullptr); job != nullptr)
      f(job);
  }
};

/// The scheduler module of a node whose policy is `handoff`.
using handoff_coordinator = caf::scheduler::coordinator<handoff_policy>;

} // namespace sandbox::actors
