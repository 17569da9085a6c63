#include "sandbox/net/port_lease.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

namespace sandbox {

namespace detail {

/// The bookkeeping shared by a registry, its copies and its leases; it lives
/// until the last of them is gone.
struct port_lease_state {
  port_lease_state(uint16_t first, uint16_t last, size_t cursor)
    : first(first),
      last(last),
      leased(size_t{last} - first + 1, false),
      cursor(cursor) {
  }

  size_t range_size() const noexcept {
    return leased.size();
  }

  void release(uint16_t port) noexcept {
    std::lock_guard<std::mutex> guard{mtx};
    auto offset = static_cast<size_t>(port - first);
    if (leased[offset]) {
      leased[offset] = false;
      --count;
    }
  }

  const uint16_t first;
  const uint16_t last;
  /// Guards everything below.
  mutable std::mutex mtx;
  /// leased[port - first] is true while a live lease (or an acquire checking
  /// the port) holds it.
  std::vector<bool> leased;
  /// Number of true entries in `leased`.
  size_t count = 0;
  /// Offset of the next port to try.
  size_t cursor;
};

} // namespace detail

namespace {

enum class probe_outcome { bindable, in_use, no_socket };

/// Checks whether a TCP socket can bind 127.0.0.1:`port`, then closes it.
/// SO_REUSEADDR makes the check ignore TIME_WAIT leftovers, which do not stop
/// a server from binding the port either, while a listening socket on the
/// port (on 127.0.0.1 or a wildcard address) still fails it. Sets `err` to
/// the errno of the failing call.
probe_outcome probe(uint16_t port, int& err) noexcept {
  // CLOEXEC: a child spawned by another thread meanwhile must not inherit it.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = errno;
    return probe_outcome::no_socket;
  }
  int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  auto res = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  err = res == 0 ? 0 : errno;
  ::close(fd);
  return res == 0 ? probe_outcome::bindable : probe_outcome::in_use;
}

size_t random_offset(size_t range_size) {
  std::random_device rd;
  return static_cast<size_t>(rd()) % range_size;
}

} // namespace

// -- port_lease ---------------------------------------------------------------

port_lease::port_lease(std::shared_ptr<detail::port_lease_state> state,
                       uint16_t port) noexcept
  : state_(std::move(state)), port_(port) {
}

port_lease::port_lease(port_lease&& other) noexcept
  : state_(std::move(other.state_)), port_(std::exchange(other.port_, 0)) {
}

port_lease& port_lease::operator=(port_lease&& other) noexcept {
  if (this != &other) {
    release();
    state_ = std::move(other.state_);
    port_ = std::exchange(other.port_, 0);
  }
  return *this;
}

port_lease::~port_lease() {
  release();
}

void port_lease::release() noexcept {
  if (state_ == nullptr)
    return;
  state_->release(port_);
  state_.reset();
  port_ = 0;
}

// -- port_lease_registry ------------------------------------------------------

result<void> validate_port_range(uint16_t first, uint16_t last) {
  if (first == 0 || first > last)
    return error{errc::invalid_argument,
                 fmt::format("invalid port range {}-{}: expected "
                             "1 <= first <= last <= 65535",
                             first, last)};
  return {};
}

port_lease_registry::port_lease_registry(uint16_t first, uint16_t last) {
  if (auto ok = validate_port_range(first, last); !ok)
    throw exception{ok.error()};
  auto size = size_t{last} - first + 1;
  state_ = std::make_shared<detail::port_lease_state>(first, last,
                                                      random_offset(size));
}

result<port_lease> port_lease_registry::acquire() {
  auto& st = *state_;
  auto size = st.range_size();
  // Each call looks at every port of the range exactly once, starting at the
  // cursor, so it fails only when every port was leased or not bindable when
  // it looked. The bind check runs outside the lock so that concurrent
  // acquires do not queue behind each other's syscalls; the candidate is
  // marked leased meanwhile so no other acquire can pick it.
  size_t start = 0;
  {
    std::lock_guard<std::mutex> guard{st.mtx};
    start = st.cursor;
  }
  size_t examined = 0;
  size_t in_use = 0;
  int last_err = 0;
  for (;;) {
    uint16_t candidate = 0;
    {
      std::lock_guard<std::mutex> guard{st.mtx};
      while (examined < size && candidate == 0) {
        auto offset = (start + examined++) % size;
        if (!st.leased[offset]) {
          st.leased[offset] = true;
          ++st.count;
          st.cursor = (offset + 1) % size;
          candidate = static_cast<uint16_t>(st.first + offset);
        }
      }
    }
    if (candidate == 0)
      break;
    int err = 0;
    switch (probe(candidate, err)) {
      case probe_outcome::bindable:
        return port_lease{state_, candidate};
      case probe_outcome::no_socket:
        st.release(candidate);
        return make_errno_error(
          err,
          fmt::format("socket (to check TCP port {} on 127.0.0.1)", candidate));
      case probe_outcome::in_use:
        st.release(candidate);
        ++in_use;
        last_err = err;
        break;
    }
  }
  auto leased = leased_count();
  auto msg = fmt::format("no free TCP port in range {}-{} on 127.0.0.1: "
                         "{} leased, {} not bindable",
                         st.first, st.last, leased, in_use);
  if (in_use > 0)
    msg += fmt::format(" (last bind error: {})", std::strerror(last_err));
  return error{errc::port_unavailable, std::move(msg)};
}

size_t port_lease_registry::leased_count() const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  return state_->count;
}

bool port_lease_registry::is_leased(uint16_t port) const {
  auto& st = *state_;
  if (port < st.first || port > st.last)
    return false;
  std::lock_guard<std::mutex> guard{st.mtx};
  return st.leased[port - st.first];
}

uint16_t port_lease_registry::first() const noexcept {
  return state_->first;
}

uint16_t port_lease_registry::last() const noexcept {
  return state_->last;
}

} // namespace sandbox
