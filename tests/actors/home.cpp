#define CAF_SUITE actors.home
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/violations.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "sandbox/client/embedded_node.hpp"

using namespace sandbox;
using namespace sandbox::actors;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A node whose temp directory is a fresh one of this test, so that the
/// default home lands in it and the test never touches the real $TMPDIR.
struct fixture {
  test::temp_dir dir;
  std::string tmp = dir.path + "/tmp";
  std::string private_dir = fmt::format("{}/sandbox-{}", tmp, ::getuid());
  std::string home = private_dir + "/home";
  std::unique_ptr<embedded_node> node;

  fixture() {
    ::mkdir(tmp.c_str(), 01777);
    ::chmod(tmp.c_str(), 01777);
  }

  void start(std::string temp_directory) {
    auto cfg = test::suite_runtime_config();
    cfg.temp_directory = std::move(temp_directory);
    cfg.reap_all_orphans = true;
    node = std::make_unique<embedded_node>(cfg);
  }

  /// A session with the default home.
  blocking_session make_session() {
    if (!node)
      start(tmp);
    session_config cfg;
    cfg.working_directory = dir.path + "/work";
    auto s = blocking_session::create(*node, cfg);
    if (!s)
      CAF_FAIL("create failed: " << s.error().message);
    return std::move(*s);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(home_tests, fixture)

CAF_TEST(the default home is private to the user) {
  auto s = make_session();
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  // A contained session's is its own, below the same private directory.
  auto own = private_dir + "/homes/" + info->id;
  auto expected = test::contained_run() ? own : home;
  CAF_CHECK_EQUAL(info->home_directory, expected);
  auto r = s.execute("echo $HOME; touch $HOME/x");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data, expected + "\n");
  CAF_CHECK_EQUAL(r->exit_code, 0);
  if (test::contained_run()) {
    struct stat st;
    CAF_REQUIRE_EQUAL(::lstat(own.c_str(), &st), 0);
    CAF_CHECK_EQUAL(st.st_mode & 07777, 0700u);
    return;
  }
  for (auto& path : {private_dir, home}) {
    struct stat st;
    CAF_REQUIRE_EQUAL(::lstat(path.c_str(), &st), 0);
    CAF_CHECK(S_ISDIR(st.st_mode));
    CAF_CHECK_EQUAL(st.st_mode & 07777, 0700u);
    CAF_CHECK_EQUAL(st.st_uid, ::getuid());
  }
  // A second session of the same user shares it.
  auto t = make_session();
  r = t.execute("test -e $HOME/x");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
}

CAF_TEST(a symlink planted at the private directory is refused) {
  auto victim = dir.path + "/victim";
  CAF_REQUIRE_EQUAL(::mkdir(victim.c_str(), 0777), 0);
  CAF_REQUIRE_EQUAL(::symlink(victim.c_str(), private_dir.c_str()), 0);
  auto s = make_session();
  auto r = s.execute("echo pwned > $HOME/x");
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::permission_denied);
  CAF_CHECK(contains(r.error().message, private_dir));
  CAF_CHECK(contains(r.error().message, "symlink"));
  // Nothing was created through the link.
  struct stat st;
  CAF_CHECK_NOT_EQUAL(::lstat((victim + "/home").c_str(), &st), 0);
}

CAF_TEST(a symlink planted at the home itself is refused) {
  auto victim = dir.path + "/victim";
  CAF_REQUIRE_EQUAL(::mkdir(victim.c_str(), 0777), 0);
  CAF_REQUIRE_EQUAL(::mkdir(private_dir.c_str(), 0700), 0);
  auto s = make_session();
  // The home this session gets (a contained one's own, below `homes`).
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  auto planted = info->home_directory;
  if (planted != home)
    CAF_REQUIRE_EQUAL(::mkdir((private_dir + "/homes").c_str(), 0700), 0);
  CAF_REQUIRE_EQUAL(::symlink(victim.c_str(), planted.c_str()), 0);
  auto r = s.execute("echo pwned > $HOME/x");
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::permission_denied);
  CAF_CHECK(contains(r.error().message, planted));
  struct stat st;
  CAF_CHECK_NOT_EQUAL(::lstat((victim + "/x").c_str(), &st), 0);
}

CAF_TEST(a private directory that others can enter is refused) {
  CAF_REQUIRE_EQUAL(::mkdir(private_dir.c_str(), 0700), 0);
  CAF_REQUIRE_EQUAL(::chmod(private_dir.c_str(), 0755), 0);
  auto s = make_session();
  auto r = s.execute("true");
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::permission_denied);
  CAF_CHECK(contains(r.error().message, private_dir));
  CAF_CHECK(contains(r.error().message, "0755"));
}

CAF_TEST(a private directory owned by another user is refused) {
  if (::geteuid() != 0) {
    CAF_MESSAGE("skipped: only root can give a directory to another user");
    return;
  }
  CAF_REQUIRE_EQUAL(::mkdir(private_dir.c_str(), 0700), 0);
  CAF_REQUIRE_EQUAL(::chown(private_dir.c_str(), 65534, 65534), 0);
  auto s = make_session();
  auto r = s.execute("true");
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == errc::permission_denied);
  CAF_CHECK(contains(r.error().message, private_dir));
  CAF_CHECK(contains(r.error().message, "owned by uid 65534"));
}

CAF_TEST(an unusable temp directory is named in full) {
  start(dir.path + "/missing");
  auto s = make_session();
  auto r = s.execute("true");
  CAF_REQUIRE(!r);
  CAF_CHECK(contains(r.error().message, fmt::format("{}/missing/sandbox-{}",
                                                    dir.path, ::getuid())));
}

CAF_TEST(file operations need no home) {
  // /proc takes no new directories: the home cannot be made there.
  start("/proc");
  auto s = make_session();
  auto files = files_of(s);
  if (test::contained_run()) {
    // A contained session's view (its mounts and write rules, made once)
    // holds its home: its file worker makes the home first, and fails
    // naming it when it cannot.
    CAF_MESSAGE("contained: file operations need the home of the view");
    CAF_REQUIRE(!files);
    CAF_CHECK(contains(files.error().message, "/proc/sandbox-"));
    return;
  }
  SANDBOX_REQUIRE_OK(files);
  SANDBOX_REQUIRE_OK(files->write_file("f", "data"));
  auto data = files->read_file("f");
  SANDBOX_REQUIRE_OK(data);
  CAF_CHECK_EQUAL(*data, "data");
  // A command needs one, and says why it has none.
  auto r = s.execute("true");
  CAF_REQUIRE(!r);
  CAF_CHECK(contains(r.error().message, "/proc/sandbox-"));
}

CAF_TEST(an explicit home is created at once) {
  start(tmp);
  session_config cfg;
  cfg.working_directory = dir.path + "/work";
  cfg.home_directory = dir.path + "/explicit/home";
  auto s = blocking_session::create(*node, cfg);
  SANDBOX_REQUIRE_OK(s);
  struct stat st;
  CAF_CHECK_EQUAL(::lstat(cfg.home_directory.c_str(), &st), 0);
  CAF_CHECK(S_ISDIR(st.st_mode));
}

CAF_TEST(NUL bytes in the session directories are refused naming them) {
  start(tmp);
  session_config cfg;
  cfg.working_directory = dir.path + std::string("/badwd/a\0zz", 11);
  cfg.home_directory = dir.path + "/home";
  auto s = blocking_session::create(*node, cfg);
  CAF_REQUIRE(!s);
  CAF_CHECK(s.error().code == errc::invalid_argument);
  CAF_CHECK(contains(s.error().message, "working_directory"));
  struct stat st;
  CAF_CHECK_NOT_EQUAL(::lstat((dir.path + "/badwd").c_str(), &st), 0);
  cfg.working_directory = dir.path + "/work";
  cfg.home_directory = dir.path + std::string("/badhome/a\0zz", 13);
  s = blocking_session::create(*node, cfg);
  CAF_REQUIRE(!s);
  CAF_CHECK(s.error().code == errc::invalid_argument);
  CAF_CHECK(contains(s.error().message, "home_directory"));
  CAF_CHECK_NOT_EQUAL(::lstat((dir.path + "/badhome").c_str(), &st), 0);
}

// -- the own home of a contained session (reliability-2 A4) -------------------

/// A contained session with the default home on this fixture's node.
result<blocking_session> make_contained(fixture& f, const std::string& wd) {
  if (!f.node)
    f.start(f.tmp);
  session_config cfg;
  cfg.working_directory = f.dir.path + "/" + wd;
  cfg.isolation = isolation_mode::contained;
  return blocking_session::create(*f.node, cfg);
}

CAF_TEST(two contained sessions do not see each other home files) {
  if (!test::host_can_contain())
    return;
  // The homes outside /tmp, where the session's private /tmp would hide
  // them anyway: what keeps B out is the deny of `homes`.
  test::outside_dir outside;
  start(outside.path);
  auto a = make_contained(*this, "a");
  auto b = make_contained(*this, "b");
  SANDBOX_REQUIRE_OK(a);
  SANDBOX_REQUIRE_OK(b);
  auto wrote = a->execute("echo secret-from-A > $HOME/note");
  SANDBOX_REQUIRE_OK(wrote);
  CAF_CHECK_EQUAL(wrote->exit_code, 0);
  // Both run: B looks while A's note is there.
  // Its home is empty, and cat fails.
  auto looked = b->execute("ls -A $HOME; cat $HOME/note");
  SANDBOX_REQUIRE_OK(looked);
  CAF_CHECK_NOT_EQUAL(looked->exit_code, 0);
  CAF_CHECK_EQUAL(looked->stdout_data, "");
  // Nor can B read it where it lies on the host.
  auto a_info = a->info();
  SANDBOX_REQUIRE_OK(a_info);
  auto peeked = b->execute("cat " + a_info->home_directory + "/note");
  SANDBOX_REQUIRE_OK(peeked);
  CAF_CHECK(peeked->stdout_data.find("secret-from-A") == std::string::npos);
  if (host_isolation().read_watch) {
    // Refused (EPERM) and reported, not just empty.
    CAF_CHECK_NOT_EQUAL(peeked->exit_code, 0);
    CAF_CHECK(
      test::has_violation(peeked->violations, violation_kind::read_denied));
  }
  // Nor is it in the shared home of the none sessions.
  struct stat st;
  auto shared = fmt::format("{}/sandbox-{}/home", outside.path, ::getuid());
  CAF_CHECK_NOT_EQUAL(::lstat((shared + "/note").c_str(), &st), 0);
  (void) a->stop();
  (void) b->stop();
}

CAF_TEST(a contained command reads back what an earlier one wrote to HOME) {
  if (!test::host_can_contain())
    return;
  auto s = make_contained(*this, "w");
  SANDBOX_REQUIRE_OK(s);
  auto wrote = s->execute("echo kept > $HOME/kept");
  SANDBOX_REQUIRE_OK(wrote);
  CAF_CHECK_EQUAL(wrote->exit_code, 0);
  auto read = s->execute("cat $HOME/kept");
  SANDBOX_REQUIRE_OK(read);
  CAF_CHECK_EQUAL(read->stdout_data, "kept\n");
  (void) s->stop();
}

CAF_TEST(the own home of a contained session is gone after its stop) {
  if (!test::host_can_contain())
    return;
  auto s = make_contained(*this, "g");
  SANDBOX_REQUIRE_OK(s);
  auto info = s->info();
  SANDBOX_REQUIRE_OK(info);
  auto r = s->execute("mkdir -p $HOME/deep/er && echo x > $HOME/deep/er/f && "
                      "ln -s / $HOME/root-link");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->exit_code, 0);
  struct stat st;
  CAF_REQUIRE_EQUAL(::lstat(info->home_directory.c_str(), &st), 0);
  auto receipt = s->stop();
  SANDBOX_REQUIRE_OK(receipt);
  // Gone when the receipt is in, the link removed and not followed.
  CAF_CHECK_NOT_EQUAL(::lstat(info->home_directory.c_str(), &st), 0);
  CAF_CHECK_EQUAL(::lstat("/usr/bin", &st), 0);
}

CAF_TEST(an explicit home of a contained session is kept after its stop) {
  if (!test::host_can_contain())
    return;
  start(tmp);
  session_config cfg;
  cfg.working_directory = dir.path + "/e";
  cfg.home_directory = dir.path + "/explicit-home";
  cfg.isolation = isolation_mode::contained;
  auto s = blocking_session::create(*node, cfg);
  SANDBOX_REQUIRE_OK(s);
  auto r = s->execute("echo x > $HOME/f");
  SANDBOX_REQUIRE_OK(r);
  (void) s->stop();
  struct stat st;
  CAF_CHECK_EQUAL(::lstat((cfg.home_directory + "/f").c_str(), &st), 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
