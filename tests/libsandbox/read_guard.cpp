#define CAF_SUITE libsandbox.read_guard
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// The guard over denied paths (docs/security.md, "Violations"): an open of
// a placeholder is refused and reported before the opener continues. Here
// the placeholders are opened directly by a child of the test (a contained
// session opens them through the mount over a denied path; the mark is on
// the placeholder itself, so the guard cannot tell the difference). The
// test's own process stands for the node, whose opens are let through.

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <vector>

#include "helpers/temp_dir.hpp"
#include "sandbox/reactor.hpp"
#include "sandbox/read_guard.hpp"

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

} // namespace

CAF_TEST_FIXTURE_SCOPE(read_guard_tests, fixture)

CAF_TEST(an open of a placeholder is refused and reported) {
  if (!guard_available())
    return;
  auto key = dir.at("key.pem");
  std::ofstream{key} << "SECRET";
  ::mkdir(dir.at("secrets").c_str(), 0755);
  auto guard = read_guard::start(r);
  SANDBOX_REQUIRE_OK(guard);
  auto cover = (*guard)->make_cover(
    dir.path, {key, dir.at("secrets"), dir.at("none")}, collect());
  SANDBOX_REQUIRE_OK(cover);
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
  // The placeholders go with their cover, and with them every report.
  auto placeholder = ph.at(key);
  cover->reset();
  CAF_CHECK_NOT_EQUAL(::access(placeholder.c_str(), F_OK), 0);
  CAF_CHECK_EQUAL(reports().size(), 2u);
}

CAF_TEST(two covers report to their own callbacks) {
  if (!guard_available())
    return;
  auto key = dir.at("key.pem");
  std::ofstream{key} << "SECRET";
  auto guard = read_guard::start(r);
  SANDBOX_REQUIRE_OK(guard);
  std::vector<std::string> other;
  std::mutex other_mtx;
  auto a = (*guard)->make_cover(dir.path, {key}, collect());
  auto b = (*guard)->make_cover(dir.path, {key}, [&](denied_read d) {
    std::lock_guard<std::mutex> lock{other_mtx};
    other.push_back(d.path);
  });
  SANDBOX_REQUIRE_OK(a);
  SANDBOX_REQUIRE_OK(b);
  CAF_CHECK_NOT_EQUAL((*a)->placeholders().at(key),
                      (*b)->placeholders().at(key));
  CAF_CHECK_EQUAL(open_in_child((*b)->placeholders().at(key), O_RDONLY).first,
                  EPERM);
  CAF_CHECK(reports().empty());
  std::lock_guard<std::mutex> lock{other_mtx};
  CAF_CHECK_EQUAL(other.size(), 1u);
}

CAF_TEST_FIXTURE_SCOPE_END()
