#define CAF_SUITE actors.contained_files
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// File operations of a contained session (docs/security.md, docs/files.md):
// they see and may change exactly what a command of the session sees and
// may change. Skipped, with the reason, only where the host cannot give
// contained sessions at all.

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "contained_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/violations.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::errc;
using sandbox::isolation_mode;
using sandbox::actors::blocking_files;
using sandbox::actors::blocking_session;
using sandbox::actors::files_of;
using sandbox::actors::session_config;
using sandbox::test::count_violations;
using sandbox::test::host_can_contain;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, {}};
}

bool mentions(const sandbox::error& e, const std::string& what) {
  return e.message.find(what) != std::string::npos;
}

/// Checks that `r` failed with `permission_denied` naming `path`.
#define CHECK_DENIED(r, path)                                                  \
  do {                                                                         \
    auto&& r_ = (r);                                                           \
    if (r_) {                                                                  \
      CAF_MESSAGE(#r " succeeded, expected permission_denied");                \
      CAF_CHECK(!r_);                                                          \
    } else {                                                                   \
      CAF_CHECK_EQUAL(r_.error().code, errc::permission_denied);               \
      if (!mentions(r_.error(), path))                                         \
        CAF_MESSAGE(r_.error().message << " does not name " << (path));        \
      CAF_CHECK(mentions(r_.error(), path));                                   \
    }                                                                          \
  } while (false)

struct fixture : sandbox::test::contained_fixture {
  /// The node's key under /tmp (invisible to the session) and one it can
  /// see (covered by an empty mount).
  std::string key;
  std::string visible_key;
  int homes = 0;

  fixture() {
    // Listed by the session (which, with ids of its own, is not the
    // directory's owner).
    ::chmod(out.path.c_str(), 0755);
    key = dir.path + "/node-key.pem";
    std::ofstream{key} << "SECRET-KEY";
    visible_key = out.path + "/node-key.pem";
    std::ofstream{visible_key} << "SECRET-KEY";
    ::mkdir((dir.path + "/base").c_str(), 0755);
    ::mkdir((out.path + "/outside").c_str(), 0755);
    std::ofstream{out.path + "/outside/kept"} << "KEPT";
    ::mkdir((out.path + "/secrets").c_str(), 0755);
    std::ofstream{out.path + "/secrets/s"} << "SECRET";
    auto cfg = sandbox::test::contained_config();
    cfg.isolation_deny = {key, visible_key, out.path + "/secrets"};
    sandbox::actors::node_config ncfg;
    ncfg.base_directory = dir.path + "/base";
    start(cfg, ncfg);
    // Sessions in a new directory under the base directory, that may see
    // `out` but not change it (outside their view else).
    work.clear();
    readable = {out.path};
  }

  /// A contained session with a home of its own.
  blocking_session make_session() {
    session_config cfg;
    cfg.home_directory = dir.path + "/home" + std::to_string(++homes);
    return contained_fixture::make_session(cfg);
  }

  static blocking_files files(blocking_session& s) {
    auto f = files_of(s);
    if (!f)
      throw std::runtime_error(f.error().message);
    return std::move(*f);
  }

  static std::string wd(blocking_session& s) {
    auto info = s.info();
    if (!info)
      throw std::runtime_error(info.error().message);
    return info->working_directory;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(contained_files_tests, fixture)

CAF_TEST(the denied key cannot be read or examined) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto f = files(s);
  auto w = wd(s);
  CHECK_DENIED(f.read_file(key), key);
  CHECK_DENIED(f.read_text(key, 1), key);
  CHECK_DENIED(f.stat(key), key);
  // Each refusal is a violation of the session, of no execution.
  auto seen = s.violations();
  SANDBOX_REQUIRE_OK(seen);
  CAF_REQUIRE(!seen->empty());
  CAF_CHECK(seen->back().kind == sandbox::violation_kind::read_denied);
  CAF_CHECK_EQUAL(seen->back().execution, 0u);
  CAF_CHECK_EQUAL(seen->back().detail, key);
  CHECK_DENIED(f.list_files(key), key);
  auto streamed = f.read_stream(key, [](const std::string&) { return true; });
  CHECK_DENIED(streamed, key);
  // Denied paths that the session's mounts cover are refused by name too,
  // not read as the empty file or directory a command sees.
  CHECK_DENIED(f.read_file(visible_key), visible_key);
  CHECK_DENIED(f.stat(visible_key), visible_key);
  CHECK_DENIED(f.list_files(out.path + "/secrets"), out.path + "/secrets");
  CHECK_DENIED(f.read_file(out.path + "/secrets/s"), out.path + "/secrets/s");
  CHECK_DENIED(f.write_file(w + "/../../../../../../../../../.." + visible_key,
                            "x"),
               visible_key);
  CHECK_DENIED(f.remove_file(visible_key), visible_key);
  CHECK_DENIED(f.write_file(out.path + "/secrets/s", "x"),
               out.path + "/secrets/s");
  // What a command sees there (the covering mounts).
  auto r = run(s, "cat " + visible_key + "; ls " + out.path + "/secrets");
  CAF_CHECK_EQUAL(r.stdout_data, "");
  if (sandbox::host_isolation().read_watch) {
    CAF_CHECK_EQUAL(
      count_violations(r.violations, sandbox::violation_kind::read_denied), 2u);
  }
  // A walk that passes the denied directory sees it empty, as the node
  // sees what covers it, and is no violation (only naming it is).
  auto before = s.violations();
  SANDBOX_REQUIRE_OK(before);
  bool saw_secrets = false;
  bool saw_inside = false;
  auto walked = f.list(out.path, 3, [&](const sandbox::fs::frame& fr) {
    saw_secrets = saw_secrets || fr.path == "secrets";
    saw_inside = saw_inside || fr.path.rfind("secrets/", 0) == 0;
    return true;
  });
  CAF_CHECK(!walked.error.has_value());
  CAF_CHECK(saw_secrets);
  CAF_CHECK(!saw_inside);
  auto after = s.violations();
  SANDBOX_REQUIRE_OK(after);
  CAF_CHECK_EQUAL(after->size(), before->size());
  // The node's own view is unchanged.
  CAF_CHECK_EQUAL(slurp(key), "SECRET-KEY");
  CAF_CHECK_EQUAL(slurp(visible_key), "SECRET-KEY");
  CAF_CHECK_EQUAL(slurp(out.path + "/secrets/s"), "SECRET");
  (void) s.stop();
}

CAF_TEST(the directories of another session cannot be read or listed) {
  if (!host_can_contain())
    return;
  auto a = make_session();
  auto b = make_session();
  auto fa = files(a);
  auto fb = files(b);
  auto a_wd = wd(a);
  SANDBOX_REQUIRE_OK(fa.write_file("mine", "private-a"));
  SANDBOX_REQUIRE_OK(fa.read_file(a_wd + "/mine"));
  CHECK_DENIED(fb.read_file(a_wd + "/mine"), a_wd + "/mine");
  CHECK_DENIED(fb.list_files(a_wd), a_wd);
  CHECK_DENIED(fb.list_files(dir.path + "/base"), dir.path + "/base");
  auto listed = fb.list(a_wd, 4,
                        [](const sandbox::fs::frame&) { return true; });
  CAF_CHECK_EQUAL(listed.count, 0u);
  CAF_REQUIRE(listed.error.has_value());
  CAF_CHECK_EQUAL(listed.error->code, errc::permission_denied);
  CHECK_DENIED(fb.write_file(a_wd + "/planted", "x"), a_wd + "/planted");
  CAF_CHECK(!exists(a_wd + "/planted"));
  CHECK_DENIED(fb.remove_file(a_wd + "/mine"), a_wd + "/mine");
  CAF_CHECK_EQUAL(slurp(a_wd + "/mine"), "private-a");
  (void) a.stop();
  (void) b.stop();
}

CAF_TEST(writes and removes outside the allowed directories change nothing) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto f = files(s);
  auto outside = out.path + "/outside";
  CHECK_DENIED(f.write_file(outside + "/new", "x"), outside + "/new");
  CHECK_DENIED(f.write_file(outside + "/d/e/new", "x"), outside + "/d/e/new");
  CAF_CHECK(!exists(outside + "/new"));
  CAF_CHECK(!exists(outside + "/d"));
  CHECK_DENIED(f.write_file(outside + "/kept", "changed"), outside + "/kept");
  CHECK_DENIED(f.remove_file(outside + "/kept"), outside + "/kept");
  CAF_CHECK_EQUAL(slurp(outside + "/kept"), "KEPT");
  CHECK_DENIED(f.open_write(outside + "/streamed"), outside + "/streamed");
  CAF_CHECK(!exists(outside + "/streamed"));
  CHECK_DENIED(f.write_file(visible_key, "overwritten"), visible_key);
  CHECK_DENIED(f.remove_file(visible_key), visible_key);
  CAF_CHECK_EQUAL(slurp(visible_key), "SECRET-KEY");
  // Relative paths climbing out of the working directory too.
  CHECK_DENIED(
    f.write_file("../../../../../../../../../.." + outside + "/climbed", "x"),
    outside + "/climbed");
  CAF_CHECK(!exists(outside + "/climbed"));
  // Under the host's /tmp is the session's private /tmp: a write lands
  // there, and the host's directory is untouched.
  SANDBOX_REQUIRE_OK(f.write_file(dir.path + "/outside/new", "private"));
  CAF_CHECK(!exists(dir.path + "/outside"));
  auto back = f.read_file(dir.path + "/outside/new");
  SANDBOX_REQUIRE_OK(back);
  CAF_CHECK_EQUAL(*back, "private");
  // Reading outside the allowed directories is fine (a command can).
  auto passwd = f.read_file("/etc/passwd");
  SANDBOX_REQUIRE_OK(passwd);
  CAF_CHECK_EQUAL(*passwd, slurp("/etc/passwd"));
  (void) s.stop();
}

CAF_TEST(symlinks planted by a command do not escape) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto f = files(s);
  auto w = wd(s);
  auto outside = out.path + "/outside";
  auto r = run(s, "ln -s " + visible_key
                    + " key-link && ln -s /etc etc-link "
                      "&& ln -s "
                    + outside + " out-link && ln -s ../../../../../../.. up"
                    + " && ln -s " + outside + "/kept kept-link");
  CAF_REQUIRE_EQUAL(r.exit_code, 0);
  // Reads through a link to a denied path are refused, naming where the
  // link leads.
  CHECK_DENIED(f.read_file("key-link"), visible_key);
  CHECK_DENIED(f.read_file("up" + visible_key), visible_key);
  CHECK_DENIED(f.read_file("up" + key), key);
  r = run(s, "ln -s up/" + visible_key.substr(1) + " chained");
  CAF_REQUIRE_EQUAL(r.exit_code, 0);
  CHECK_DENIED(f.read_file("chained"), visible_key);
  auto streamed = f.read_stream("chained",
                                [](const std::string&) { return true; });
  CHECK_DENIED(streamed, visible_key);
  // Writes through links into places the session may not change.
  CHECK_DENIED(f.write_file("out-link/escaped", "x"), outside + "/escaped");
  CHECK_DENIED(f.write_file("out-link/new/dir/escaped", "x"),
               outside + "/new/dir/escaped");
  CHECK_DENIED(f.write_file("up" + outside + "/escaped", "x"),
               outside + "/escaped");
  CAF_CHECK(!exists(outside + "/escaped"));
  CAF_CHECK(!exists(outside + "/new"));
  CHECK_DENIED(f.remove_file("out-link/kept"), outside + "/kept");
  CAF_CHECK_EQUAL(slurp(outside + "/kept"), "KEPT");
  // A write of the link itself replaces the link, never its target.
  SANDBOX_REQUIRE_OK(f.write_file("kept-link", "mine"));
  CAF_CHECK_EQUAL(slurp(outside + "/kept"), "KEPT");
  CAF_CHECK_EQUAL(slurp(w + "/kept-link"), "mine");
  SANDBOX_REQUIRE_OK(f.remove_file("key-link"));
  CAF_CHECK_EQUAL(slurp(visible_key), "SECRET-KEY");
  // A listing does not look through a link at the host's file.
  auto entries = f.list_files(".");
  SANDBOX_REQUIRE_OK(entries);
  for (auto& e : *entries)
    if (e.name == "etc-link")
      CAF_CHECK(e.has_metadata && e.is_dir);
  (void) s.stop();
}

CAF_TEST(tmp is the private tmp of the session) {
  if (!host_can_contain())
    return;
  auto a = make_session();
  auto b = make_session();
  auto fa = files(a);
  auto fb = files(b);
  auto info = a.info();
  SANDBOX_REQUIRE_OK(info);
  auto name = "/tmp/sandbox-contained-" + info->id;
  auto r = run(a, "echo from-command > " + name + "-cmd");
  CAF_REQUIRE_EQUAL(r.exit_code, 0);
  auto read = fa.read_file(name + "-cmd");
  SANDBOX_REQUIRE_OK(read);
  CAF_CHECK_EQUAL(*read, "from-command\n");
  SANDBOX_REQUIRE_OK(fa.write_file(name + "-files", "from-files"));
  auto cat = run(a, "cat " + name + "-files");
  CAF_CHECK_EQUAL(cat.stdout_data, "from-files");
  SANDBOX_REQUIRE_OK(fa.write_file("/dev/shm/sandbox-shm", "shm"));
  CAF_CHECK_EQUAL(run(a, "cat /dev/shm/sandbox-shm").stdout_data, "shm");
  // Neither the host nor another contained session sees them.
  CAF_CHECK(!exists(name + "-cmd"));
  CAF_CHECK(!exists(name + "-files"));
  auto other = fb.read_file(name + "-files");
  CAF_REQUIRE(!other);
  CAF_CHECK_EQUAL(other.error().code, errc::path_not_found);
  (void) a.stop();
  (void) b.stop();
}

CAF_TEST(the working directory and the home are writable and CAS works) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto f = files(s);
  auto w = wd(s);
  auto home = dir.path + "/home" + std::to_string(homes);
  SANDBOX_REQUIRE_OK(f.write_file("notes/deep/a.txt", "v1"));
  CAF_CHECK_EQUAL(slurp(w + "/notes/deep/a.txt"), "v1");
  auto st = f.stat("notes/deep/a.txt");
  SANDBOX_REQUIRE_OK(st);
  SANDBOX_REQUIRE_OK(f.write_file("notes/deep/a.txt", "v2", st->version));
  auto stale = f.write_file("notes/deep/a.txt", "v3", st->version);
  CAF_REQUIRE(!stale);
  CAF_CHECK_EQUAL(stale.error().code, errc::conflict);
  auto exists_already = f.write_file("notes/deep/a.txt", "v4", "");
  CAF_REQUIRE(!exists_already);
  CAF_CHECK_EQUAL(exists_already.error().code, errc::conflict);
  CAF_CHECK_EQUAL(slurp(w + "/notes/deep/a.txt"), "v2");
  SANDBOX_REQUIRE_OK(f.write_file(home + "/h.txt", "in-home"));
  CAF_CHECK_EQUAL(run(s, "cat ~/h.txt").stdout_data, "in-home");
  auto writer = f.open_write("streamed.bin");
  SANDBOX_REQUIRE_OK(writer);
  SANDBOX_REQUIRE_OK(writer->write("ab"));
  SANDBOX_REQUIRE_OK(writer->write("cd"));
  SANDBOX_REQUIRE_OK(writer->commit());
  CAF_CHECK_EQUAL(slurp(w + "/streamed.bin"), "abcd");
  std::string got;
  auto total = f.read_stream("streamed.bin", [&got](const std::string& c) {
    got += c;
    return true;
  });
  SANDBOX_REQUIRE_OK(total);
  CAF_CHECK_EQUAL(got, "abcd");
  auto listed = f.list(".", 3, [](const sandbox::fs::frame&) { return true; });
  CAF_CHECK(!listed.error.has_value());
  CAF_CHECK_EQUAL(listed.count, 4u); // notes, deep, a.txt, streamed.bin
  SANDBOX_REQUIRE_OK(f.remove_file("streamed.bin"));
  CAF_CHECK(!exists(w + "/streamed.bin"));
  // Errors still name the session's path, not the view's plumbing.
  auto missing = f.read_file("no-such-file");
  CAF_REQUIRE(!missing);
  CAF_CHECK_EQUAL(missing.error().code, errc::path_not_found);
  CAF_MESSAGE(missing.error().message);
  CAF_CHECK(mentions(missing.error(), w + "/no-such-file"));
  CAF_CHECK(!mentions(missing.error(), "/proc/self/fd"));
  (void) s.stop();
}

CAF_TEST(contained file operations leak no descriptor) {
  if (!host_can_contain())
    return;
  auto s = make_session();
  auto f = files(s);
  // The session's init and view exist from the first operation on.
  SANDBOX_REQUIRE_OK(f.write_file("a", "x"));
  auto before = sandbox::test::plumbing_fds();
  for (int i = 0; i < 3; ++i) {
    (void) f.read_file(key);
    (void) f.write_file(out.path + "/outside/x", "x");
    (void) f.read_file(visible_key);
    (void) f.write_file("d/e/f", "x");
    (void) f.read_file("d/e/f");
    (void) f.read_file("missing/deeper");
    (void) f.list_files(".");
    (void) f.stat("d/e");
    (void) f.list(".", 5, [](const sandbox::fs::frame&) { return true; });
    (void) f.read_stream("a", [](const std::string&) { return true; });
    (void) f.remove_file("d/e/f");
  }
  CAF_CHECK_EQUAL(sandbox::test::plumbing_fds(), before);
  (void) s.stop();
}

CAF_TEST_FIXTURE_SCOPE_END()
