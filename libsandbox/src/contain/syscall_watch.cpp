#include "sandbox/contain/syscall_watch.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "contain/seccomp_filter.hpp"
#include "contain/syscall_judge.hpp"
#include "sandbox/io/reactor.hpp"

namespace sandbox {

using detail::as_native;
using detail::judge;

namespace {

seccomp_notif_sizes notif_sizes() {
  static const seccomp_notif_sizes sizes = [] {
    seccomp_notif_sizes s{};
    if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &s) != 0) {
      s.seccomp_notif = sizeof(seccomp_notif);
      s.seccomp_notif_resp = sizeof(seccomp_notif_resp);
    }
    return s;
  }();
  return sizes;
}

// -- the judges
// ------------------------------------------------------------------

/// The threads that judge watched calls, for the whole process: a judgement
/// reads the caller's memory and walks its view (bounded, but milliseconds
/// for a path made to be slow), so it runs neither on a reactor thread
/// (every session's output, exits and forwards) nor on a thread of its
/// own per session. Started at the first watch with every signal blocked,
/// and kept until the process exits (never destroyed: a judgement may be
/// running then).
boost::asio::thread_pool& judges() {
  static auto* pool = [] {
    sigset_t all;
    sigset_t old;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &old);
    auto* p = new boost::asio::thread_pool(judge_threads);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return p;
  }();
  return *pool;
}

/// The notifications of one filter (a session's, or one command's) waiting
/// for a judge, judged one at a time (a filter holds at most one judge;
/// another filter's turn comes between two of its calls), and answered
/// from the judge's thread.
struct judge_queue : std::enable_shared_from_this<judge_queue> {
  /// The listener, closed with the last of the watcher and the judgements
  /// waiting: answered even after the watcher (on the reactor) has let go
  /// of it.
  unique_fd listener;
  std::shared_ptr<const watch_policy> policy;
  std::vector<char> response;

  /// Guards `report`: emptied by `close` when the watcher ends, so that
  /// what it holds (the session's receivers) goes with the reactor.
  std::mutex report_mtx;
  std::function<void(pid_t, violation)> report;

  /// Guards `pending` and `queued`.
  std::mutex mtx;
  std::deque<seccomp_notif> pending;
  bool queued = false;

  void submit(const seccomp_notif& n) {
    std::lock_guard<std::mutex> guard{mtx};
    pending.push_back(n);
    if (!queued) {
      queued = true;
      boost::asio::post(judges(), [self = shared_from_this()] { self->run(); });
    }
  }

  void close() {
    std::function<void(pid_t, violation)> gone;
    std::lock_guard<std::mutex> guard{report_mtx};
    gone.swap(report);
  }

  /// On a judge: answers one notification, then queues again behind the
  /// others if more wait.
  void run() {
    seccomp_notif n;
    {
      std::lock_guard<std::mutex> guard{mtx};
      n = pending.front();
      pending.pop_front();
    }
    answer(n);
    std::lock_guard<std::mutex> guard{mtx};
    if (pending.empty())
      queued = false;
    else
      boost::asio::post(judges(), [self = shared_from_this()] { self->run(); });
  }

  void answer(seccomp_notif& n) {
    detail::verdict v;
    if (auto call = as_native(n)) {
      if (auto* refused = detail::refused_call_of(call->data))
        v = {violation{violation_kind::syscall_denied, policy->execution,
                       refused},
             true};
      else
        v = judge(*call, *policy);
    }
    // What was read belongs to the caller only while it still waits; the
    // report comes before the call returns.
    if (v.report
        && ::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_ID_VALID, &n.id) == 0) {
      std::lock_guard<std::mutex> guard{report_mtx};
      if (report)
        report(static_cast<pid_t>(n.pid), std::move(*v.report));
    }
    std::fill(response.begin(), response.end(), 0);
    auto* r = reinterpret_cast<seccomp_notif_resp*>(response.data());
    r->id = n.id;
    if (v.refuse)
      r->error = -EPERM;
    else
      r->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    ::ioctl(listener.get(), SECCOMP_IOCTL_NOTIF_SEND, r);
  }
};

// -- the watcher
// -----------------------------------------------------------------

/// Receives the notifications on the reactor (a read, at once) and hands
/// them to the judges.
struct watcher : std::enable_shared_from_this<watcher> {
  /// The queue's listener, which the watcher never closes (`end`).
  boost::asio::posix::stream_descriptor fd;
  std::shared_ptr<judge_queue> queue;
  std::vector<char> request;
  /// The first wait is queued on the launching thread, not posted to the
  /// strand (which would wake a reactor thread for it): held by that wait
  /// and by the handlers (which run on the strand), so that the two never
  /// touch the descriptor at the same time.
  std::mutex mtx;

  /// On a strand of its own: a wait, its check and its handler never run
  /// at the same time.
  watcher(reactor& r, std::shared_ptr<judge_queue> q)
    : fd(boost::asio::make_strand(r.context()), q->listener.get()),
      queue(std::move(q)) {
  }

  ~watcher() {
    end();
    queue->close();
  }

  /// Lets go of the listener (the queue closes it): a pending wait ends
  /// with operation_aborted.
  void end() {
    if (!fd.is_open())
      return;
    (void) fd.release();
  }

  /// Queues the first wait, on the launching thread.
  void start() {
    std::lock_guard<std::mutex> guard{mtx};
    wait();
  }

  /// With `mtx` held.
  void wait() {
    fd.async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec)
          self->on_ready();
      });
    // Asio registers the descriptor edge-triggered and never tries a wait
    // before it is queued: the end of the filter's last user, if it came
    // while no wait was queued (before the first, or while `on_ready`
    // ran), raised its one edge for nobody, and the listener would stay
    // open for as long as the node lives. Looked at once more now that the
    // wait is queued, so that it is seen either here or by the wait.
    if (hung_up())
      end();
  }

  /// Nothing uses the filter any more (and nothing waits for an answer).
  bool hung_up() {
    pollfd p{fd.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) == 0
           && (p.revents & (POLLHUP | POLLERR)) != 0;
  }

  void on_ready() {
    std::lock_guard<std::mutex> guard{mtx};
    // Every notification that waits, each received at once.
    for (;;) {
      pollfd p{fd.native_handle(), POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0 || (p.revents & POLLIN) == 0)
        break;
      std::fill(request.begin(), request.end(), 0);
      auto* n = reinterpret_cast<seccomp_notif*>(request.data());
      // The caller is gone (ENOENT) or was interrupted: nothing to judge.
      if (::ioctl(fd.native_handle(), SECCOMP_IOCTL_NOTIF_RECV, n) == 0)
        queue->submit(*n);
    }
    wait(); // lets go of the listener if nothing uses the filter any more
  }
};

} // namespace

void watch_syscalls(reactor& r, unique_fd listener,
                    std::shared_ptr<const watch_policy> policy,
                    std::function<void(pid_t, violation)> report) {
  if (!listener)
    return;
  auto q = std::make_shared<judge_queue>();
  q->listener = std::move(listener);
  q->policy = std::move(policy);
  q->report = std::move(report);
  auto sizes = notif_sizes();
  q->response.resize(
    std::max<size_t>(sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp)));
  auto w = std::make_shared<watcher>(r, std::move(q));
  w->request.resize(
    std::max<size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)));
  w->start();
}

} // namespace sandbox
