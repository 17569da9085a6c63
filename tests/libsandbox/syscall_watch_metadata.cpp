#define CAF_SUITE libsandbox.syscall_watch_metadata
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Changes of metadata and connections to unix sockets under the watch of
// contained commands (syscall_watch.hpp; reliability A2, A3, A9). A forked
// child runs under the filter without Landlock, so every call the node
// lets through succeeds: an EPERM is the node's refusal. chmod, chown,
// utimensat and xattr calls outside the writable places are refused and
// reported as `write_denied` naming the call and the path, wherever a
// link leads; set-uid and set-gid modes and `security.capability` are
// refused everywhere (`syscall_denied`); a connect or send to a unix
// socket outside is refused and reported as `connect_denied`.

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "helpers/foreign_abi.hpp"
#include "helpers/temp_dir.hpp"
#include "helpers/watched_child.hpp"

using sandbox::violation_kind;

namespace {

struct fixture {
  sandbox::test::temp_dir dir;
  std::string inside;
  std::string outside;

  fixture() {
    inside = dir.path + "/in";
    outside = dir.path + "/out";
    ::mkdir(inside.c_str(), 0755);
    ::mkdir(outside.c_str(), 0755);
    std::ofstream{inside + "/f"} << "x";
    std::ofstream{outside + "/f"} << "x";
    ::chmod((outside + "/f").c_str(), 0600);
    ::mkdir((inside + "/d").c_str(), 0755);
    // A link inside that leads out.
    CAF_REQUIRE_EQUAL(
      ::symlink((outside + "/f").c_str(), (inside + "/link").c_str()), 0);
  }

  /// Whether `v` holds exactly one violation of `kind` with `detail`,
  /// tagged with the child's execution.
  static bool has(const std::vector<sandbox::violation>& v, violation_kind kind,
                  const std::string& detail) {
    size_t n = 0;
    for (auto& x : v)
      if (x.kind == kind && x.detail == detail && x.execution == 7)
        ++n;
    if (n != 1)
      CAF_MESSAGE("seen " << n << " times: " << detail);
    return n == 1;
  }

  static mode_t mode_of(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }
};

/// Whether a call failed with EPERM (-1 and errno).
bool eperm(long rc) {
  return rc == -1 && errno == EPERM;
}

/// Each check of a child adds one when it holds; the exit status says how
/// many did.
struct tally {
  int n = 0;
  void operator+=(bool ok) {
    n += ok ? 1 : 0;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(syscall_watch_metadata_tests, fixture)

CAF_TEST(
  metadata changes outside the writable places are refused and reported) {
  auto out = outside + "/f";
  auto link = inside + "/link";
  auto [status, seen] = sandbox::test::watched_child(inside, [&] {
    tally t;
    int fd = ::open(out.c_str(), O_RDONLY | O_CLOEXEC);
    t += eperm(::chmod(out.c_str(), 0666));
    t += eperm(::fchmod(fd, 0666));
    t += eperm(::fchmodat(AT_FDCWD, out.c_str(), 0666, 0));
    t += eperm(
      ::chown(out.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(-1)));
    t += eperm(::fchown(fd, static_cast<uid_t>(-1), static_cast<gid_t>(-1)));
    t += eperm(::utimensat(AT_FDCWD, out.c_str(), nullptr, 0));
    t += eperm(::syscall(SYS_utimensat, fd, nullptr, nullptr, 0));
    t += eperm(::setxattr(out.c_str(), "user.x", "1", 1, 0));
    t += eperm(::removexattr(out.c_str(), "user.x"));
    // Through a link inside that leads out.
    t += eperm(::chmod(link.c_str(), 0666));
    return t.n;
  });
  CAF_REQUIRE(WIFEXITED(status));
  CAF_CHECK_EQUAL(WEXITSTATUS(status), 10);
  CAF_CHECK_EQUAL(mode_of(out), 0600u);
  using k = violation_kind;
  CAF_CHECK(has(seen, k::write_denied, "chmod " + out));
  CAF_CHECK(has(seen, k::write_denied, "fchmod " + out));
  CAF_CHECK(has(seen, k::write_denied, "fchmodat " + out));
  CAF_CHECK(has(seen, k::write_denied, "chown " + out));
  CAF_CHECK(has(seen, k::write_denied, "fchown " + out));
  auto utimes = std::count_if(seen.begin(), seen.end(),
                              [&](const sandbox::violation& v) {
                                return v.detail == "utimensat " + out;
                              });
  CAF_CHECK_EQUAL(utimes, 2);
  CAF_CHECK(has(seen, k::write_denied, "setxattr " + out));
  CAF_CHECK(has(seen, k::write_denied, "removexattr " + out));
  CAF_CHECK(has(seen, k::write_denied, "chmod " + link + " (-> " + out + ")"));
  CAF_CHECK_EQUAL(seen.size(), 10u);
}

CAF_TEST(metadata changes inside the writable places run and are not reported) {
  auto f = inside + "/f";
  auto link = inside + "/link";
  auto [status, seen] = sandbox::test::watched_child(inside, [&] {
    tally t;
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    t += ::chmod(f.c_str(), 0755) == 0; // chmod +x
    t += ::fchmod(fd, 0700) == 0;
    t += ::chown(f.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(-1))
         == 0;
    t += ::utimensat(AT_FDCWD, f.c_str(), nullptr, 0) == 0;
    // The link itself is inside: lchown does not follow it.
    t += ::lchown(link.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(-1))
         == 0;
    // A file system without user attributes says so; the node does not.
    t += ::setxattr(f.c_str(), "user.x", "1", 1, 0) == 0 || errno != EPERM;
    t += ::chmod(f.c_str(), 0755) == 0;
    return t.n;
  });
  CAF_REQUIRE(WIFEXITED(status));
  CAF_CHECK_EQUAL(WEXITSTATUS(status), 7);
  CAF_CHECK_EQUAL(mode_of(f), 0755u);
  CAF_CHECK(seen.empty());
}

CAF_TEST(set - uid and set - gid modes are refused and reported wherever) {
  auto f = inside + "/f";
  auto d = inside + "/d";
  auto made = inside + "/made";
  auto [status, seen] = sandbox::test::watched_child(inside, [&] {
    tally t;
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    t += eperm(::chmod(f.c_str(), 04755));
    t += eperm(::chmod(d.c_str(), 02755));
    t += eperm(::fchmod(fd, 06755));
    t += eperm(::fchmodat(AT_FDCWD, f.c_str(), 04711, 0));
    t += eperm(::syscall(452 /* fchmodat2 */, AT_FDCWD, f.c_str(), 02755, 0));
    t += eperm(::open(made.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 04755));
    t += eperm(::setxattr(f.c_str(), "security.capability", "0000", 4, 0));
    t += ::chmod(f.c_str(), 0755) == 0;
    return t.n;
  });
  CAF_REQUIRE(WIFEXITED(status));
  CAF_CHECK_EQUAL(WEXITSTATUS(status), 8);
  CAF_CHECK_EQUAL(mode_of(f), 0755u);
  CAF_CHECK_EQUAL(mode_of(d), 0755u);
  CAF_CHECK(::access(made.c_str(), F_OK) != 0);
  using k = violation_kind;
  CAF_CHECK(has(seen, k::syscall_denied, "chmod 4755 " + f));
  CAF_CHECK(has(seen, k::syscall_denied, "chmod 2755 " + d));
  CAF_CHECK(has(seen, k::syscall_denied, "fchmod 6755 " + f));
  CAF_CHECK(has(seen, k::syscall_denied, "fchmodat 4711 " + f));
  CAF_CHECK(has(seen, k::syscall_denied, "fchmodat2 2755 " + f));
  CAF_CHECK(has(seen, k::syscall_denied, "open 4755 " + made));
  CAF_CHECK(has(seen, k::syscall_denied, "setxattr security.capability " + f));
  CAF_CHECK_EQUAL(seen.size(), 7u);
}

CAF_TEST(unix sockets outside are refused and reported) {
  auto address = [](const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.data(), path.size());
    return a;
  };
  // Host listeners: a stream one outside and inside, a datagram one
  // outside.
  auto listen_at = [&](const std::string& path, int type) {
    int s = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    auto a = address(path);
    CAF_REQUIRE_EQUAL(
      ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(sockaddr_un)), 0);
    if (type == SOCK_STREAM)
      CAF_REQUIRE_EQUAL(::listen(s, 4), 0);
    return s;
  };
  auto host = outside + "/host.sock";
  auto host_dgram = outside + "/host.dgram";
  auto own = inside + "/own.sock";
  auto missing = outside + "/missing.sock";
  int l1 = listen_at(host, SOCK_STREAM);
  int l2 = listen_at(host_dgram, SOCK_DGRAM);
  int l3 = listen_at(own, SOCK_STREAM);
  auto a_host = address(host);
  auto a_dgram = address(host_dgram);
  auto a_own = address(own);
  auto a_missing = address(missing);
  auto [status, seen] = sandbox::test::watched_child(inside, [&] {
    tally t;
    auto sa = [](sockaddr_un& a) { return reinterpret_cast<sockaddr*>(&a); };
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    t += eperm(::connect(s, sa(a_host), sizeof(sockaddr_un)));
    t += ::connect(s, sa(a_own), sizeof(sockaddr_un)) == 0;
    int s2 = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    t += ::connect(s2, sa(a_missing), sizeof(sockaddr_un)) == -1
         && errno == ENOENT;
    int d = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    t += eperm(::sendto(d, "x", 1, 0, sa(a_dgram), sizeof(sockaddr_un)));
    // A send on a connected socket names no address: unwatched.
    t += ::send(s, "x", 1, 0) == 1;
    return t.n;
  });
  ::close(l1);
  ::close(l2);
  ::close(l3);
  CAF_REQUIRE(WIFEXITED(status));
  CAF_CHECK_EQUAL(WEXITSTATUS(status), 5);
  using k = violation_kind;
  CAF_CHECK(has(seen, k::connect_denied, "connect unix:" + host));
  CAF_CHECK(has(seen, k::connect_denied, "sendto unix:" + host_dgram));
  CAF_CHECK_EQUAL(seen.size(), 2u);
}

CAF_TEST(x32 metadata calls are judged as their x86 - 64 twins) {
  using namespace sandbox::test;
  auto out = outside + "/f";
  auto f = inside + "/f";
  auto* out_low = low_copy(out.c_str());
  auto* f_low = low_copy(f.c_str());
  auto [status, seen] = watched_child(inside, [&] {
    // The node answers before the kernel looks at the ABI: EPERM even
    // where the kernel has no x32.
    tally t;
    t += x32_syscall(__X32_SYSCALL_BIT + SYS_chmod,
                     reinterpret_cast<long>(out_low), 0666)
         == -EPERM;
    t += x32_syscall(__X32_SYSCALL_BIT + SYS_chmod,
                     reinterpret_cast<long>(f_low), 04755)
         == -EPERM;
    return t.n;
  });
  CAF_REQUIRE(WIFEXITED(status));
  CAF_CHECK_EQUAL(WEXITSTATUS(status), 2);
  CAF_CHECK(has(seen, violation_kind::write_denied, "chmod " + out));
  CAF_CHECK(has(seen, violation_kind::syscall_denied, "chmod 4755 " + f));
  CAF_CHECK_EQUAL(mode_of(out), 0600u);
}

CAF_TEST_FIXTURE_SCOPE_END()
