#include "sandbox/contain/syscall_watch.hpp"

#include <linux/seccomp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "contain/seccomp_filter.hpp"
#include "contain/syscall_judge.hpp"
#include "sandbox/io/reactor.hpp"

namespace sandbox {

using detail::as_native;
using detail::judge;

namespace {

// -- the watcher
// -----------------------------------------------------------------

struct watcher : std::enable_shared_from_this<watcher> {
  boost::asio::posix::stream_descriptor fd;
  std::shared_ptr<const watch_policy> policy;
  std::function<void(violation)> report;
  std::vector<char> request;
  std::vector<char> response;

  /// On a strand of its own: a wait, its check and its handler never run
  /// at the same time.
  watcher(reactor& r, int listener)
    : fd(boost::asio::make_strand(r.context()), listener) {
  }

  /// On the strand.
  void wait() {
    fd.async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec)
          self->on_ready();
      });
    // Asio registers the descriptor edge-triggered and never tries a wait
    // before it is queued: the end of the filter's last user, if it came
    // while no wait was queued (while `on_ready` ran), raised its one edge
    // for nobody, and the listener would stay open for as long as the node
    // lives. Looked at once more now that the wait is queued, so that it
    // is seen either here or by the wait.
    if (hung_up()) {
      boost::system::error_code ignored;
      fd.close(ignored); // the wait ends with operation_aborted
    }
  }

  /// Nothing uses the filter any more (and nothing waits for an answer).
  bool hung_up() {
    pollfd p{fd.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) == 0
           && (p.revents & (POLLHUP | POLLERR)) != 0;
  }

  void on_ready() {
    pollfd p{fd.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0)
      handle_one();
    wait(); // closes the listener if nothing uses the filter any more
  }

  void handle_one() {
    std::fill(request.begin(), request.end(), 0);
    auto* n = reinterpret_cast<seccomp_notif*>(request.data());
    if (::ioctl(fd.native_handle(), SECCOMP_IOCTL_NOTIF_RECV, n) != 0)
      return; // The caller is gone (ENOENT) or was interrupted.
    std::optional<violation> v;
    const char* refused = nullptr;
    if (auto call = as_native(*n)) {
      refused = detail::refused_call_of(call->data);
      if (refused != nullptr)
        v = violation{violation_kind::syscall_denied, policy->execution,
                      refused};
      else
        v = judge(*call, *policy);
    }
    // What was read belongs to the caller only while it still waits.
    if (v
        && ::ioctl(fd.native_handle(), SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id)
             == 0)
      report(std::move(*v));
    std::fill(response.begin(), response.end(), 0);
    auto* r = reinterpret_cast<seccomp_notif_resp*>(response.data());
    r->id = n->id;
    if (refused != nullptr)
      r->error = -EPERM;
    else
      r->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    ::ioctl(fd.native_handle(), SECCOMP_IOCTL_NOTIF_SEND, r);
  }
};

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

} // namespace

void watch_syscalls(reactor& r, unique_fd listener,
                    std::shared_ptr<const watch_policy> policy,
                    std::function<void(violation)> report) {
  auto w = std::make_shared<watcher>(r, listener.release());
  w->policy = std::move(policy);
  w->report = std::move(report);
  auto sizes = notif_sizes();
  w->request.resize(
    std::max<size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)));
  w->response.resize(
    std::max<size_t>(sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp)));
  boost::asio::post(w->fd.get_executor(), [w] { w->wait(); });
}

} // namespace sandbox
