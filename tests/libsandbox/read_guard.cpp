#define CAF_SUITE libsandbox.read_guard
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The guard over denied paths (docs/security.md, "Violations"): an open of
// a placeholder is refused and reported before the opener continues. Here
// the placeholders are opened directly by a child of the test (a contained
// session opens them through the mount over a denied path; the mark is on
// the placeholder itself, so the guard cannot tell the difference). The
// test's own process stands for the node, whose opens are let through.

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <set>
#include <vector>

#include "helpers/temp_dir.hpp"
#include "sandbox/contain/read_guard.hpp"
#include "sandbox/io/reactor.hpp"

using namespace sandbox;

namespace {

struct fixture {
  sandbox::test::temp_dir dir;
  reactor r{1};
  std::mutex mtx;
  std::vector<denied_read> seen;

  std::function<void(denied_read)> collect() {
    return [this](denied_read d) {
      std::lock_guard<std::mutex> guard{mtx};
      seen.push_back(std::move(d));
    };
  }

  /// What was reported so far. The report runs before the refused open
  /// returns, so no wait is needed after it.
  std::vector<denied_read> reports() {
    std::lock_guard<std::mutex> guard{mtx};
    return seen;
  }
};

/// The errno of opening `path` with `flags` in a child process (0: it
/// opened), and the child's pid.
std::pair<int, pid_t> open_in_child(const std::string& path, int flags) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(path.c_str(), flags | O_CLOEXEC);
    ::_exit(fd >= 0 ? 0 : errno);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, pid};
}

bool guard_available() {
  if (!read_guard::available())
    CAF_MESSAGE("skipped: this process cannot hold fanotify permission "
                "marks (CAP_SYS_ADMIN)");
  return read_guard::available();
}

/// The two pipes between the test and a child that answers rounds: each
/// time the test writes a byte (`next`), the child runs a round and
/// answers an errno (0: the step worked). Only system calls in the child:
/// the test has other threads.
struct rounds {
  int to_child[2] = {-1, -1};
  int from_child[2] = {-1, -1};

  rounds() {
    CAF_REQUIRE_EQUAL(::pipe2(to_child, O_CLOEXEC), 0);
    CAF_REQUIRE_EQUAL(::pipe2(from_child, O_CLOEXEC), 0);
  }

  /// In the child: drops the test's ends, so that it sees the test close
  /// its own.
  void in_child() {
    ::close(to_child[1]);
    ::close(from_child[0]);
  }

  /// In the child: `probe(round)` for each round the test asks for, until
  /// the test closes its end; then exits.
  template <class Probe>
  [[noreturn]] void serve(Probe probe) {
    char c;
    for (int round = 0; ::read(to_child[0], &c, 1) == 1; ++round) {
      int err = probe(round);
      if (::write(from_child[1], &err, sizeof(err)) != sizeof(err))
        ::_exit(2);
    }
    ::_exit(0);
  }

  /// In the test, after the fork: drops the child's ends.
  void in_test() {
    ::close(to_child[0]);
    ::close(from_child[1]);
  }

  /// The errno of the child's next round; -1 when it ended instead.
  int next() {
    char c = 'x';
    int err = -1;
    if (::write(to_child[1], &c, 1) != 1
        || ::read(from_child[0], &err, sizeof(err)) != sizeof(err))
      return -1;
    return err;
  }

  /// Closes the test's ends.
  void close() {
    ::close(to_child[1]);
    ::close(from_child[0]);
  }
};

/// A child in a user and mount namespace of its own (as a session's init
/// is) with `tree` moved over `over`; it answers `probe`'s questions
/// (`rounds`) and ends when the test closes its end.
struct mounted_child {
  pid_t pid = -1;
  rounds r;

  /// `probe(round)` runs in the child and returns the errno of the step
  /// it tried in that round (0: it worked).
  template <class Probe>
  mounted_child(int tree, const std::string& over, Probe probe) {
    char map[64];
    int map_len = std::snprintf(map, sizeof(map), "0 %u 1", ::geteuid());
    pid = ::fork();
    if (pid == 0) {
      auto put = [](const char* file, const char* data, size_t len) {
        int fd = ::open(file, O_WRONLY | O_CLOEXEC);
        return fd >= 0 && ::write(fd, data, len) == static_cast<ssize_t>(len);
      };
      if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0
          || !put("/proc/self/setgroups", "deny", 4)
          || !put("/proc/self/uid_map", map, map_len)
          || !put("/proc/self/gid_map", map, map_len)
          || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0
          || ::move_mount(tree, "", AT_FDCWD, over.c_str(),
                          MOVE_MOUNT_F_EMPTY_PATH)
               != 0)
        ::_exit(1);
      r.in_child();
      r.serve(probe);
    }
    r.in_test();
  }

  int next() {
    return r.next();
  }

  ~mounted_child() {
    r.close();
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};

/// A process in a PID namespace of its own (the PID 1 there, as a
/// session's init is), made by an intermediate child. In each round
/// (`rounds`) it opens `path` read-only, itself, but in round 1 from a
/// child in a PID namespace nested in its own.
struct pid_ns_child {
  pid_t pid = -1;
  rounds r;

  explicit pid_ns_child(const std::string& path) {
    const char* file = path.c_str();
    auto opened = [file] {
      int fd = ::open(file, O_RDONLY | O_CLOEXEC);
      return fd >= 0 ? 0 : errno;
    };
    auto opened_in_new_ns = [opened] {
      if (::unshare(CLONE_NEWPID) != 0)
        return -1;
      pid_t p = ::fork();
      if (p == 0)
        ::_exit(opened());
      int status = 0;
      ::waitpid(p, &status, 0);
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    };
    pid_t middle = ::fork();
    if (middle == 0) {
      r.in_child();
      if (::unshare(CLONE_NEWPID) != 0)
        ::_exit(1);
      pid_t inner = ::fork();
      if (inner == 0)
        r.serve([&](int round) {
          return round == 1 ? opened_in_new_ns() : opened();
        });
      // The inner pid, as the test sees it, then done.
      if (::write(r.from_child[1], &inner, sizeof(inner)) != sizeof(inner))
        ::_exit(3);
      ::_exit(0);
    }
    r.in_test();
    CAF_REQUIRE_EQUAL(::read(r.from_child[0], &pid, sizeof(pid)),
                      static_cast<ssize_t>(sizeof(pid)));
    int status = 0;
    ::waitpid(middle, &status, 0);
  }

  int next() {
    return r.next();
  }

  /// Returns once the child has ended: it holds the only other end of the
  /// answers, which read end-of-file then.
  ~pid_ns_child() {
    ::close(r.to_child[1]);
    char buf[16];
    while (::read(r.from_child[0], buf, sizeof(buf)) > 0)
      ;
    ::close(r.from_child[0]);
  }
};

/// How many descriptors of this process's (shared) table are `device`.
size_t open_devices(const std::string& device) {
  size_t n = 0;
  if (auto* d = ::opendir("/proc/self/fd")) {
    while (auto* e = ::readdir(d)) {
      char target[64] = {};
      auto link = std::string{"/proc/self/fd/"} + e->d_name;
      if (::readlink(link.c_str(), target, sizeof(target) - 1) > 0
          && device == target)
        ++n;
    }
    ::closedir(d);
  }
  return n;
}

int errno_of(int rc) {
  return rc >= 0 ? 0 : errno;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(read_guard_tests, fixture)

CAF_TEST(an open of a placeholder is refused and reported) {
  if (!guard_available())
    return;
  auto key = dir.at("key.pem");
  std::ofstream{key} << "SECRET";
  ::mkdir(dir.at("secrets").c_str(), 0755);
  // Placeholders for directories too (as where the node cannot serve FUSE).
  auto guard = read_guard::start(r, false);
  SANDBOX_REQUIRE_OK(guard);
  auto cover = (*guard)->make_cover(
    dir.path, {key, dir.at("secrets"), dir.at("none")}, collect());
  SANDBOX_REQUIRE_OK(cover);
  // A file's placeholder is shared: its opens go to the cover bound to the
  // opener's PID namespace, here the test's own.
  (*cover)->bind(::getpid());
  CAF_CHECK((*cover)->mounts().empty());
  auto& ph = (*cover)->placeholders();
  // A missing path gets no placeholder.
  CAF_REQUIRE_EQUAL(ph.size(), 2u);
  CAF_REQUIRE_EQUAL(ph.count(key), 1u);
  CAF_REQUIRE_EQUAL(ph.count(dir.at("secrets")), 1u);
  struct stat st;
  CAF_REQUIRE_EQUAL(::stat(ph.at(key).c_str(), &st), 0);
  CAF_CHECK(S_ISREG(st.st_mode));
  CAF_CHECK_EQUAL(st.st_size, 0);
  CAF_REQUIRE_EQUAL(::stat(ph.at(dir.at("secrets")).c_str(), &st), 0);
  CAF_CHECK(S_ISDIR(st.st_mode));
  // Refused, and reported with the reader, its group and the denied path
  // (not the placeholder's).
  auto [file_err, file_pid] = open_in_child(ph.at(key), O_RDONLY);
  CAF_CHECK_EQUAL(file_err, EPERM);
  auto [dir_err, dir_pid] = open_in_child(ph.at(dir.at("secrets")),
                                          O_RDONLY | O_DIRECTORY);
  CAF_CHECK_EQUAL(dir_err, EPERM);
  auto seen = reports();
  CAF_REQUIRE_EQUAL(seen.size(), 2u);
  CAF_CHECK_EQUAL(seen[0].path, key);
  CAF_CHECK_EQUAL(seen[0].pid, file_pid);
  CAF_CHECK_EQUAL(seen[0].pgid, ::getpgrp());
  CAF_CHECK_EQUAL(seen[1].path, dir.at("secrets"));
  CAF_CHECK_EQUAL(seen[1].pid, dir_pid);
  // The node's own opens (this process) see the placeholder, empty, and
  // are not reported.
  int own = ::open(ph.at(key).c_str(), O_RDONLY | O_CLOEXEC);
  CAF_CHECK_GREATER_OR_EQUAL(own, 0);
  char c;
  CAF_CHECK_EQUAL(::read(own, &c, 1), 0);
  ::close(own);
  CAF_CHECK_EQUAL(reports().size(), 2u);
  // The denied path itself is not touched.
  std::ifstream in{key};
  std::string content;
  in >> content;
  CAF_CHECK_EQUAL(content, "SECRET");
  // A directory's placeholder goes with its cover, and every report with
  // it; a file's stays with the guard (for the other sessions), still
  // refused, until the guard ends.
  auto file_placeholder = ph.at(key);
  auto dir_placeholder = ph.at(dir.at("secrets"));
  cover->reset();
  CAF_CHECK_NOT_EQUAL(::access(dir_placeholder.c_str(), F_OK), 0);
  CAF_CHECK_EQUAL(open_in_child(file_placeholder, O_RDONLY).first, EPERM);
  CAF_CHECK_EQUAL(reports().size(), 2u);
  guard->reset();
  CAF_CHECK_NOT_EQUAL(::access(file_placeholder.c_str(), F_OK), 0);
}

CAF_TEST(two covers share a file placeholder and report by PID namespace) {
  if (!guard_available())
    return;
  auto key = dir.at("key.pem");
  std::ofstream{key} << "SECRET";
  auto guard = read_guard::start(r);
  SANDBOX_REQUIRE_OK(guard);
  std::vector<denied_read> other;
  std::mutex other_mtx;
  auto a = (*guard)->make_cover(dir.path, {key}, collect());
  auto b = (*guard)->make_cover(dir.path, {key}, [&](denied_read d) {
    std::lock_guard<std::mutex> lock{other_mtx};
    other.push_back(std::move(d));
  });
  SANDBOX_REQUIRE_OK(a);
  SANDBOX_REQUIRE_OK(b);
  auto ph = (*a)->placeholders().at(key);
  CAF_CHECK_EQUAL((*b)->placeholders().at(key), ph);
  // Each session: a PID namespace of its own.
  pid_ns_child session_a{ph};
  pid_ns_child session_b{ph};
  (*a)->bind(session_a.pid);
  (*b)->bind(session_b.pid);
  // An open in `b`'s namespace, then in one nested in it, go to `b`.
  CAF_CHECK_EQUAL(session_b.next(), EPERM);
  CAF_CHECK_EQUAL(session_b.next(), EPERM);
  // An open in `a`'s namespace goes to `a`.
  CAF_CHECK_EQUAL(session_a.next(), EPERM);
  auto seen = reports();
  CAF_REQUIRE_EQUAL(seen.size(), 1u);
  CAF_CHECK_EQUAL(seen[0].pid, session_a.pid);
  CAF_CHECK_EQUAL(seen[0].path, key);
  {
    std::lock_guard<std::mutex> lock{other_mtx};
    CAF_REQUIRE_EQUAL(other.size(), 2u);
    CAF_CHECK_EQUAL(other[0].pid, session_b.pid);
    CAF_CHECK_EQUAL(other[0].path, key);
    CAF_CHECK_NOT_EQUAL(other[1].pid, session_b.pid);
  }
  // Outside every bound namespace (the node's own): refused, unreported.
  CAF_CHECK_EQUAL(open_in_child(ph, O_RDONLY).first, EPERM);
  // Once `b` ends, its namespace's opens are refused and reported to
  // nobody; `a` still gets its own.
  b->reset();
  CAF_CHECK_EQUAL(session_b.next(), EPERM);
  CAF_CHECK_EQUAL(session_a.next(), EPERM);
  CAF_CHECK_EQUAL(reports().size(), 2u);
  std::lock_guard<std::mutex> lock{other_mtx};
  CAF_CHECK_EQUAL(other.size(), 2u);
}

CAF_TEST(the placeholders a killed node left are removed by the next guard) {
  if (!guard_available())
    return;
  auto key = dir.at("key.pem");
  std::ofstream{key} << "SECRET";
  // A pid that no longer runs, and one that does (ours).
  pid_t dead = ::fork();
  if (dead == 0)
    ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  auto left = [&](const std::string& prefix, pid_t pid) {
    auto d = dir.at(prefix + std::to_string(pid) + "-abcdef");
    ::mkdir(d.c_str(), 0700);
    std::ofstream{d + "/f0"};
    return d;
  };
  auto dead_shared = left("sandbox-deny-shared-", dead);
  auto dead_cover = left("sandbox-deny-", dead);
  auto live_shared = left("sandbox-deny-shared-", ::getpid());
  auto other = dir.at("sandbox-deny-mine");
  ::mkdir(other.c_str(), 0700);
  auto guard = read_guard::start(r, false);
  SANDBOX_REQUIRE_OK(guard);
  auto cover = (*guard)->make_cover(dir.path, {key}, collect());
  SANDBOX_REQUIRE_OK(cover);
  CAF_CHECK_NOT_EQUAL(::access(dead_shared.c_str(), F_OK), 0);
  CAF_CHECK_NOT_EQUAL(::access(dead_cover.c_str(), F_OK), 0);
  CAF_CHECK_EQUAL(::access((live_shared + "/f0").c_str(), F_OK), 0);
  CAF_CHECK_EQUAL(::access(other.c_str(), F_OK), 0);
  // This guard's own directory goes with it.
  auto placeholder = (*cover)->placeholders().at(key);
  CAF_CHECK_EQUAL(::access(placeholder.c_str(), F_OK), 0);
  cover->reset();
  guard->reset();
  CAF_CHECK_NOT_EQUAL(
    ::access(placeholder.substr(0, placeholder.rfind('/')).c_str(), F_OK), 0);
}

CAF_TEST(a name looked up below a denied directory is refused and reported) {
  if (!guard_available())
    return;
  if (!read_guard::lookup_watch()) {
    CAF_MESSAGE("skipped: this process cannot serve FUSE (/dev/fuse)");
    return;
  }
  auto secrets = dir.at("secrets");
  ::mkdir(secrets.c_str(), 0755);
  std::ofstream{secrets + "/s"} << "SECRET";
  auto guard = read_guard::start(r);
  SANDBOX_REQUIRE_OK(guard);
  auto cover = (*guard)->make_cover(dir.path, {secrets}, collect(),
                                    {secrets + "/own/work", dir.at("else")});
  SANDBOX_REQUIRE_OK(cover);
  // A mount, not a placeholder.
  CAF_CHECK_EQUAL((*cover)->placeholders().count(secrets), 0u);
  CAF_REQUIRE_EQUAL((*cover)->mounts().count(secrets), 1u);
  // Its device is in no descriptor table a thread of the test (the node)
  // shares, nor so in any child it makes: only the server's own table
  // holds it, so its connection ends with that thread, whatever the rest
  // of the process waits for.
  CAF_CHECK_EQUAL(open_devices("/dev/fuse"), 0u);
  auto file = secrets + "/s";
  auto own = secrets + "/own";
  auto work = secrets + "/own/work";
  auto other = secrets + "/other/f";
  mounted_child child{
    (*cover)->mounts().at(secrets), secrets, [&](int round) {
      struct stat st;
      switch (round) {
        case 0: // a file below the denied directory
          return errno_of(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
        case 1: // a path through a name that is not there either
          return errno_of(::stat(other.c_str(), &st));
        case 2: // a listing of the denied directory itself
          return errno_of(
            ::open(secrets.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        case 3: // the way to a kept directory
          return errno_of(::stat(work.c_str(), &st))
                 + errno_of(
                   ::open(own.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        default: // after the cover ended: fails, never hangs
          return errno_of(::stat(file.c_str(), &st));
      }
    }};
  CAF_CHECK_EQUAL(child.next(), EPERM);
  CAF_CHECK_EQUAL(child.next(), EPERM);
  CAF_CHECK_EQUAL(child.next(), EPERM);
  CAF_CHECK_EQUAL(child.next(), 0);
  // Each refusal reported before the reader went on, with the reader, its
  // group and the first name it could not have.
  auto seen = reports();
  CAF_REQUIRE_EQUAL(seen.size(), 3u);
  CAF_CHECK_EQUAL(seen[0].path, file);
  CAF_CHECK_EQUAL(seen[0].pid, child.pid);
  CAF_CHECK_EQUAL(seen[0].pgid, ::getpgrp());
  CAF_CHECK_EQUAL(seen[1].path, secrets + "/other");
  CAF_CHECK_EQUAL(seen[2].path, secrets);
  // The node's own view (through the child's root): an empty directory
  // but for the way to the kept one; nothing reported.
  auto inside = "/proc/" + std::to_string(child.pid) + "/root" + secrets;
  std::set<std::string> names;
  if (auto* d = ::opendir(inside.c_str())) {
    while (auto* e = ::readdir(d))
      names.insert(e->d_name);
    ::closedir(d);
  }
  CAF_CHECK_EQUAL(names, (std::set<std::string>{".", "..", "own"}));
  struct stat st;
  CAF_CHECK_EQUAL(errno_of(::stat((inside + "/s").c_str(), &st)), ENOENT);
  CAF_CHECK_EQUAL(reports().size(), 3u);
  // The denied directory itself is not touched.
  CAF_CHECK_EQUAL(::access(file.c_str(), R_OK), 0);
  // Once the cover ends, a lookup fails at once. (Its connection closes on
  // the guard's own thread soon after; for certain when the guard ends.)
  cover->reset();
  guard->reset();
  CAF_CHECK_EQUAL(child.next(), ENOTCONN);
  CAF_CHECK_EQUAL(reports().size(), 3u);
}

CAF_TEST_FIXTURE_SCOPE_END()
