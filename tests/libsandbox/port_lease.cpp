#define CAF_SUITE libsandbox.port_lease
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <atomic>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sandbox/net/port_lease.hpp"

using sandbox::errc;
using sandbox::port_lease;
using sandbox::port_lease_registry;

namespace {

// A TCP socket of the test itself ("another process"), bound with
// SO_REUSEADDR and listening: the hardest case for the registry's bind check,
// which also uses SO_REUSEADDR.
class listener {
public:
  listener(uint16_t port, uint32_t address) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0)
      return;
    int on = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(address);
    ok_ = ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0
          && ::listen(fd_, 1) == 0;
  }

  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;

  ~listener() {
    if (fd_ >= 0)
      ::close(fd_);
  }

  bool ok() const noexcept {
    return ok_;
  }

private:
  int fd_ = -1;
  bool ok_ = false;
};

bool bindable(uint16_t port) {
  listener probe{port, INADDR_LOOPBACK};
  return probe.ok();
}

// Finds `n` consecutive ports that bind on 127.0.0.1 right now, below the
// ephemeral range so outgoing connections of other tests seldom take them.
uint16_t find_free_block(uint16_t n) {
  std::minstd_rand rng{std::random_device{}()};
  std::uniform_int_distribution<int> dist{21000, 31000};
  for (int attempt = 0; attempt < 1000; ++attempt) {
    auto base = static_cast<uint16_t>(dist(rng));
    bool all = true;
    for (uint16_t i = 0; i < n && all; ++i)
      all = bindable(static_cast<uint16_t>(base + i));
    if (all)
      return base;
  }
  CAF_FAIL("found no block of " << n << " free ports");
}

} // namespace

// §18: no port is handed to two live leases, under concurrency.
CAF_TEST(a thousand leases acquired from eight threads are distinct) {
  port_lease_registry registry;
  constexpr int threads = 8;
  constexpr int per_thread = 125;
  std::vector<std::vector<port_lease>> leases(threads);
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&registry, &leases, &failures, t] {
      for (int i = 0; i < per_thread; ++i) {
        auto lease = registry.acquire();
        if (lease)
          leases[t].push_back(std::move(*lease));
        else
          ++failures;
      }
    });
  for (auto& w : workers)
    w.join();
  CAF_CHECK_EQUAL(failures.load(), 0);
  std::set<uint16_t> ports;
  for (auto& per : leases)
    for (auto& lease : per) {
      CAF_CHECK(lease);
      CAF_CHECK_GREATER_OR_EQUAL(lease.port(), registry.first());
      CAF_CHECK_LESS_OR_EQUAL(lease.port(), registry.last());
      CAF_CHECK(registry.is_leased(lease.port()));
      ports.insert(lease.port());
    }
  CAF_CHECK_EQUAL(ports.size(), 1000u);
  CAF_CHECK_EQUAL(registry.leased_count(), 1000u);
  leases.clear();
  CAF_CHECK_EQUAL(registry.leased_count(), 0u);
}

// §22: with leases coming and going on a small range, a port
// never has two holders at once.
CAF_TEST(a port never has two live holders while leases churn) {
  constexpr uint16_t range = 16;
  auto base = find_free_block(range);
  port_lease_registry registry{base, static_cast<uint16_t>(base + range - 1)};
  std::vector<std::atomic<int>> holders(range);
  std::atomic<int> overlaps{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 8; ++t)
    workers.emplace_back([&, base] {
      for (int i = 0; i < 300; ++i) {
        auto lease = registry.acquire();
        if (!lease) {
          ++failures;
          continue;
        }
        auto& count = holders[lease->port() - base];
        if (count.fetch_add(1) != 0)
          ++overlaps;
        std::this_thread::yield();
        count.fetch_sub(1);
      }
    });
  for (auto& w : workers)
    w.join();
  CAF_CHECK_EQUAL(overlaps.load(), 0);
  CAF_CHECK_EQUAL(failures.load(), 0);
  CAF_CHECK_EQUAL(registry.leased_count(), 0u);
}

// §18 ("leases exactly one free TCP port"): a port that another socket holds
// is never leased, whether it listens on 127.0.0.1 or on the wildcard
// address.
CAF_TEST(a port bound and listening elsewhere is never leased) {
  auto base = find_free_block(4);
  auto loopback_port = static_cast<uint16_t>(base + 1);
  auto wildcard_port = static_cast<uint16_t>(base + 2);
  listener on_loopback{loopback_port, INADDR_LOOPBACK};
  listener on_wildcard{wildcard_port, INADDR_ANY};
  CAF_REQUIRE(on_loopback.ok());
  CAF_REQUIRE(on_wildcard.ok());
  port_lease_registry registry{base, static_cast<uint16_t>(base + 3)};
  // Several rounds, so the rotating cursor starts at every port of the range.
  for (int round = 0; round < 8; ++round) {
    auto a = registry.acquire();
    auto b = registry.acquire();
    CAF_REQUIRE(a && b);
    std::set<uint16_t> got{a->port(), b->port()};
    CAF_CHECK_EQUAL(got, (std::set<uint16_t>{base, uint16_t(base + 3)}));
    auto c = registry.acquire();
    CAF_REQUIRE(c.has_error());
    CAF_CHECK(c.error().code == errc::port_unavailable);
    CAF_CHECK_NOT_EQUAL(c.error().message.find("2 not bindable"),
                        std::string::npos);
    CAF_CHECK(!registry.is_leased(loopback_port));
    CAF_CHECK(!registry.is_leased(wildcard_port));
  }
  CAF_CHECK_EQUAL(registry.leased_count(), 0u);
}

// §22: a released port is free again. The rotating cursor hands a
// released port out again only after going round the range.
CAF_TEST(release makes a port available again after the cursor wraps) {
  auto base = find_free_block(3);
  port_lease_registry registry{base, static_cast<uint16_t>(base + 2)};
  std::vector<uint16_t> order;
  for (int i = 0; i < 4; ++i) {
    auto lease = registry.acquire();
    CAF_REQUIRE(lease);
    order.push_back(lease->port());
    CAF_CHECK_EQUAL(registry.leased_count(), 1u);
  } // each lease ends here
  CAF_CHECK_EQUAL(registry.leased_count(), 0u);
  // Three distinct ports in a row, then the first one again.
  CAF_CHECK_EQUAL(std::set<uint16_t>(order.begin(), order.begin() + 3).size(),
                  3u);
  CAF_CHECK_EQUAL(order[3], order[0]);
  // A full range frees up by exactly the released port.
  auto a = registry.acquire();
  auto b = registry.acquire();
  auto c = registry.acquire();
  CAF_REQUIRE(a && b && c);
  CAF_CHECK(registry.acquire().has_error());
  auto freed = b->port();
  b->release();
  CAF_CHECK(!registry.is_leased(freed));
  CAF_CHECK_EQUAL(registry.leased_count(), 2u);
  auto d = registry.acquire();
  CAF_REQUIRE(d);
  CAF_CHECK_EQUAL(d->port(), freed);
  CAF_CHECK(registry.is_leased(freed));
}

// §18 and semantics §23: exhausting the range is port_unavailable, and the
// message names the range.
CAF_TEST(an exhausted range gives port_unavailable naming the range) {
  auto base = find_free_block(3);
  auto last = static_cast<uint16_t>(base + 2);
  port_lease_registry registry{base, last};
  std::vector<port_lease> held;
  for (int i = 0; i < 3; ++i) {
    auto lease = registry.acquire();
    CAF_REQUIRE(lease);
    held.push_back(std::move(*lease));
  }
  auto none = registry.acquire();
  CAF_REQUIRE(none.has_error());
  CAF_CHECK(none.error().code == errc::port_unavailable);
  auto range = std::to_string(base) + "-" + std::to_string(last);
  CAF_MESSAGE("message: " << none.error().message);
  CAF_CHECK_NOT_EQUAL(none.error().message.find(range), std::string::npos);
  CAF_CHECK_NOT_EQUAL(none.error().message.find("3 leased"), std::string::npos);
  CAF_CHECK_EQUAL(registry.leased_count(), 3u);
  // result<T>::value() throws the error as a sandbox::exception.
  try {
    registry.acquire().value();
    CAF_FAIL("value() of an error did not throw");
  } catch (const sandbox::exception& e) {
    CAF_CHECK(e.get().code == errc::port_unavailable);
  }
}

// §22 (the port is released exactly once): moving a lease moves ownership;
// neither a moved-from handle nor a second release frees a port that a new
// lease holds.
CAF_TEST(a move only lease handle releases its port exactly once) {
  static_assert(!std::is_copy_constructible_v<port_lease>);
  static_assert(!std::is_copy_assignable_v<port_lease>);
  static_assert(std::is_nothrow_move_constructible_v<port_lease>);
  static_assert(std::is_nothrow_move_assignable_v<port_lease>);
  auto base = find_free_block(2);
  port_lease_registry one_port{base, base};
  {
    auto a = one_port.acquire().value();
    auto port = a.port();
    CAF_CHECK_EQUAL(port, base);
    port_lease b{std::move(a)};
    CAF_CHECK(!a); // NOLINT(bugprone-use-after-move): checks the moved-from
    CAF_CHECK_EQUAL(a.port(), 0u);
    CAF_CHECK(b);
    CAF_CHECK_EQUAL(b.port(), port);
    CAF_CHECK_EQUAL(one_port.leased_count(), 1u);
    b.release();
    CAF_CHECK(!b);
    CAF_CHECK_EQUAL(one_port.leased_count(), 0u);
    // The port goes to a new lease; the stale handles must not free it.
    auto c = one_port.acquire();
    CAF_REQUIRE(c);
    CAF_CHECK_EQUAL(c->port(), port);
    b.release();
    a.release();
    CAF_CHECK(one_port.is_leased(port));
    CAF_CHECK_EQUAL(one_port.leased_count(), 1u);
  } // a, b and c end here; only c frees the port
  CAF_CHECK_EQUAL(one_port.leased_count(), 0u);
  // Move assignment frees the port the target held.
  auto second = static_cast<uint16_t>(base + 1);
  port_lease_registry two_ports{base, second};
  auto x = two_ports.acquire().value();
  auto y = two_ports.acquire().value();
  auto x_port = x.port();
  auto y_port = y.port();
  x = std::move(y);
  CAF_CHECK_EQUAL(x.port(), y_port);
  CAF_CHECK(!two_ports.is_leased(x_port));
  CAF_CHECK(two_ports.is_leased(y_port));
  CAF_CHECK_EQUAL(two_ports.leased_count(), 1u);
  port_lease empty;
  CAF_CHECK(!empty);
  empty.release();
}

// A session's lease may outlive the registry object it came from,
// and copies of the registry are the same registry.
CAF_TEST(a lease may outlive its registry object and copies share state) {
  auto base = find_free_block(2);
  port_lease lease;
  {
    port_lease_registry registry{base, static_cast<uint16_t>(base + 1)};
    auto copy = registry;
    lease = registry.acquire().value();
    CAF_CHECK(copy.is_leased(lease.port()));
    CAF_CHECK_EQUAL(copy.leased_count(), 1u);
    auto moved = std::move(copy); // copies: `copy` keeps working
    CAF_CHECK_EQUAL(copy.leased_count(), 1u);
    CAF_CHECK(moved.acquire().value().port() != lease.port());
  }
  CAF_CHECK(lease);
  lease.release();
  CAF_CHECK(!lease);
}

// Semantics §23: a bad range is an invalid_argument naming it; ports outside
// the range are never leased.
CAF_TEST(an invalid range is refused and ports outside the range are free) {
  for (auto [first, last] : {std::pair<uint16_t, uint16_t>{0, 10},
                             std::pair<uint16_t, uint16_t>{30001, 30000}}) {
    try {
      port_lease_registry registry{first, last};
      CAF_FAIL("range " << first << "-" << last << " was accepted");
    } catch (const sandbox::exception& e) {
      CAF_CHECK(e.get().code == errc::invalid_argument);
      auto range = std::to_string(first) + "-" + std::to_string(last);
      CAF_CHECK_NOT_EQUAL(e.get().message.find(range), std::string::npos);
    }
  }
  port_lease_registry registry{30000, 30001};
  CAF_CHECK_EQUAL(registry.first(), 30000u);
  CAF_CHECK_EQUAL(registry.last(), 30001u);
  CAF_CHECK(!registry.is_leased(0));
  CAF_CHECK(!registry.is_leased(29999));
  CAF_CHECK(!registry.is_leased(65535));
  port_lease_registry defaults;
  CAF_CHECK_EQUAL(defaults.first(), sandbox::default_first_leased_port);
  CAF_CHECK_EQUAL(defaults.last(), sandbox::default_last_leased_port);
}

CAF_TEST(validate_port_range names an empty or inverted range) {
  for (auto [first, last] : {std::pair<uint16_t, uint16_t>{0, 0},
                             std::pair<uint16_t, uint16_t>{50000, 40000},
                             std::pair<uint16_t, uint16_t>{0, 10}}) {
    auto ok = sandbox::validate_port_range(first, last);
    CAF_REQUIRE(!ok);
    CAF_CHECK(ok.error().code == errc::invalid_argument);
    auto range = std::to_string(first) + "-" + std::to_string(last);
    CAF_CHECK_NOT_EQUAL(ok.error().message.find(range), std::string::npos);
  }
  CAF_CHECK(sandbox::validate_port_range(1, 1));
  CAF_CHECK(sandbox::validate_port_range(1, 65535));
}
