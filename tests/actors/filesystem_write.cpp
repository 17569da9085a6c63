#define CAF_SUITE actors.filesystem_write
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include "filesystem_fixture.hpp"

using sandbox::errc;
using sandbox::test::code;
using sandbox::test::get_file;
using sandbox::test::open_temp_files_in;
using sandbox::test::put_file;
using sandbox::test::temp_files_in;
namespace actors = sandbox::actors;

CAF_TEST_FIXTURE_SCOPE(filesystem_write_tests, sandbox::test::files_fixture)

CAF_TEST(S13 write creates parents and replaces atomically) {
  CAF_REQUIRE_EQUAL(code(files.write_file("p/q/r.txt", "first")), "ok");
  CAF_CHECK_EQUAL(get_file(at("p/q/r.txt")), "first");
  auto before = files.stat("p/q/r.txt").value();
  CAF_REQUIRE_EQUAL(code(files.write_file("p/q/r.txt", "second")), "ok");
  CAF_CHECK_EQUAL(get_file(at("p/q/r.txt")), "second");
  // A replacing write is a new inode, hence a new version.
  CAF_CHECK_NOT_EQUAL(files.stat("p/q/r.txt").value().version, before.version);
  CAF_CHECK_EQUAL(temp_files_in(at("p/q")), 0u);
  CAF_REQUIRE_EQUAL(::mkdir(at("adir").c_str(), 0755), 0);
  CAF_CHECK_EQUAL(code(files.write_file("adir", "x")), "not_a_regular_file");
  CAF_CHECK_EQUAL(code(files.write_file("p/q/r.txt/under", "x")),
                  "path_not_found");
}

CAF_TEST(S13 a streamed write is invisible until commit) {
  put_file(at("doc"), "old");
  auto w = files.open_write("doc");
  CAF_REQUIRE_EQUAL(code(w), "ok");
  CAF_REQUIRE_EQUAL(code(w->write("new ")), "ok");
  CAF_CHECK_EQUAL(files.read_file("doc").value(), "old");
  CAF_REQUIRE_EQUAL(code(w->write("content")), "ok");
  CAF_CHECK_EQUAL(files.read_file("doc").value(), "old");
  // Anonymous (O_TMPFILE) until the commit: nothing shows.
  CAF_CHECK_EQUAL(temp_files_in(wd), 0u);
  CAF_REQUIRE_EQUAL(code(w->commit()), "ok");
  CAF_CHECK_EQUAL(files.read_file("doc").value(), "new content");
  CAF_CHECK_EQUAL(temp_files_in(wd), 0u);
  CAF_CHECK_EQUAL(code(w->write("more")), "invalid_argument");
  CAF_CHECK_EQUAL(code(w->commit()), "invalid_argument");
}

CAF_TEST(S13 abort and a dropped writer leave the old file) {
  put_file(at("keep"), "old");
  {
    auto w = files.open_write("keep");
    CAF_REQUIRE_EQUAL(code(w), "ok");
    CAF_REQUIRE_EQUAL(code(w->write("partial")), "ok");
    w->abort();
    w->abort();
  }
  CAF_CHECK_EQUAL(get_file(at("keep")), "old");
  CAF_CHECK_EQUAL(temp_files_in(wd), 0u);
  {
    auto w = files.open_write("keep");
    CAF_REQUIRE_EQUAL(code(w), "ok");
    CAF_REQUIRE_EQUAL(code(w->write("partial")), "ok");
  }
  CAF_CHECK_EQUAL(get_file(at("keep")), "old");
  CAF_CHECK_EQUAL(temp_files_in(wd), 0u);
  CAF_CHECK_EQUAL(code(files.abort_write(12345)), "ok");
}

CAF_TEST(S13 a write whose opener terminates is aborted) {
  put_file(at("orphan"), "old");
  auto worker = files.handle();
  uint64_t id = 0;
  {
    caf::scoped_actor opener{sys()};
    opener
      ->request(worker, caf::infinite, actors::open_write_atom_v,
                std::string{"orphan"}, actors::write_options{})
      .receive([&](uint64_t x) { id = x; },
               [](caf::error& err) { CAF_FAIL(err); });
    opener
      ->request(worker, caf::infinite, actors::write_atom_v, id,
                std::string{"partial"})
      .receive([](actors::ack_atom) {}, [](caf::error& err) { CAF_FAIL(err); });
    // Anonymous (O_TMPFILE) until the commit: nothing shows.
    CAF_CHECK_EQUAL(temp_files_in(wd), 0u);
    CAF_CHECK_EQUAL(open_temp_files_in(wd), 1u);
  }
  // The opener's termination enqueued its down message at the worker
  // before this request, so the write is gone by the time it is handled.
  caf::scoped_actor self{sys()};
  self->request(worker, caf::infinite, actors::commit_atom_v, id)
    .receive([](actors::ok_atom) { CAF_FAIL("committed an orphan"); },
             [](caf::error& err) {
               CAF_CHECK(sandbox::test::code_of(err) == errc::invalid_argument);
             });
  CAF_CHECK_EQUAL(get_file(at("orphan")), "old");
  CAF_CHECK_EQUAL(temp_files_in(wd), 0u);
  CAF_CHECK_EQUAL(open_temp_files_in(wd), 0u);
}

CAF_TEST(S13 a stale if_version is a conflict and leaves the file) {
  put_file(at("cas"), "v1");
  auto v1 = files.stat("cas").value().version;
  CAF_REQUIRE_EQUAL(code(files.write_file("cas", "v2", v1)), "ok");
  CAF_CHECK_EQUAL(get_file(at("cas")), "v2");
  auto v2 = files.stat("cas").value().version;
  // v1 is stale now.
  auto stale = files.write_file("cas", "v3", v1);
  CAF_CHECK_EQUAL(code(stale), "conflict");
  CAF_CHECK_EQUAL(get_file(at("cas")), "v2");
  CAF_CHECK_EQUAL(files.stat("cas").value().version, v2);
  // "" means: must not exist.
  CAF_CHECK_EQUAL(code(files.write_file("cas", "v3", std::string{})),
                  "conflict");
  CAF_CHECK_EQUAL(code(files.write_file("fresh", "new", std::string{})), "ok");
  CAF_CHECK_EQUAL(code(files.open_write("cas", v1)), "conflict");
  // A change between open and commit is caught at commit.
  auto w = files.open_write("cas", v2);
  CAF_REQUIRE_EQUAL(code(w), "ok");
  CAF_REQUIRE_EQUAL(code(w->write("mine")), "ok");
  CAF_REQUIRE_EQUAL(code(files.write_file("cas", "theirs")), "ok");
  CAF_CHECK_EQUAL(code(w->commit()), "conflict");
  CAF_CHECK_EQUAL(get_file(at("cas")), "theirs");
  CAF_CHECK_EQUAL(temp_files_in(wd), 0u);
}

CAF_TEST_FIXTURE_SCOPE_END()
