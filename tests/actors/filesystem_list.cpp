#define CAF_SUITE actors.filesystem_list
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <fmt/format.h>

#include "filesystem/filesystem.hpp"
#include "filesystem_fixture.hpp"

using sandbox::errc;
using sandbox::test::code_of;
using sandbox::test::list_raw;
using sandbox::test::put_file;
namespace actors = sandbox::actors;
namespace fs = sandbox::fs;

namespace {

std::vector<std::string> paths_of(const std::vector<fs::frame>& frames) {
  std::vector<std::string> out;
  for (auto& f : frames)
    out.push_back(f.path);
  return out;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(filesystem_list_tests, sandbox::test::files_fixture)

CAF_TEST(S16 frames come depth first with siblings sorted by bytes) {
  CAF_REQUIRE_EQUAL(::mkdir(at("t").c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::mkdir(at("t/b").c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::mkdir(at("t/b/d").c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::mkdir(at("t/B").c_str(), 0755), 0);
  put_file(at("t/a"), "a");
  put_file(at("t/b/c"), "cc");
  put_file(at("t/b/d/e"), "eee");
  CAF_REQUIRE_EQUAL(::symlink("b", at("t/link").c_str()), 0);
  CAF_REQUIRE_EQUAL(::mkfifo(at("t/pipe").c_str(), 0644), 0);
  auto all = list_raw(sys(), files.handle(), "t", 10);
  CAF_REQUIRE_EQUAL(all.dones.size(), 1u);
  CAF_CHECK_EQUAL(all.late_batches, 0u);
  CAF_CHECK(!all.dones[0].error);
  CAF_CHECK_EQUAL(all.dones[0].count, 8u);
  CAF_CHECK_EQUAL(paths_of(all.frames),
                  (std::vector<std::string>{"B", "a", "b", "b/c", "b/d",
                                            "b/d/e", "link", "pipe"}));
  CAF_REQUIRE_EQUAL(all.frames.size(), 8u);
  CAF_CHECK(all.frames[0].kind == fs::file_kind::dir);
  CAF_CHECK(all.frames[1].kind == fs::file_kind::file);
  CAF_CHECK_EQUAL(all.frames[1].size, 1u);
  CAF_CHECK_EQUAL(all.frames[5].name, "e");
  CAF_CHECK_EQUAL(all.frames[5].size, 3u);
  CAF_CHECK(all.frames[6].kind == fs::file_kind::symlink);
  CAF_CHECK(all.frames[7].kind == fs::file_kind::other);
  auto one = list_raw(sys(), files.handle(), "t", 1);
  CAF_CHECK_EQUAL(paths_of(one.frames),
                  (std::vector<std::string>{"B", "a", "b", "link", "pipe"}));
  auto two = files.list("t", 2, {});
  CAF_CHECK(!two.error);
  CAF_CHECK_EQUAL(two.count, 7u);
  // An absolute root works as well.
  auto abs = list_raw(sys(), files.handle(), at("t/b"), 1);
  CAF_CHECK_EQUAL(paths_of(abs.frames), (std::vector<std::string>{"c", "d"}));
}

CAF_TEST(S16 max_depth 0 lists nothing and still ends with one done) {
  put_file(at("x"), "x");
  auto r = list_raw(sys(), files.handle(), ".", 0);
  CAF_CHECK(r.frames.empty());
  CAF_REQUIRE_EQUAL(r.dones.size(), 1u);
  CAF_CHECK(!r.dones[0].error);
  CAF_CHECK_EQUAL(r.dones[0].count, 0u);
}

CAF_TEST(S16 a missing root ends with one done carrying the error) {
  auto r = list_raw(sys(), files.handle(), "missing", 3);
  CAF_CHECK(r.frames.empty());
  CAF_REQUIRE_EQUAL(r.dones.size(), 1u);
  CAF_CHECK(code_of(r.dones[0].error) == errc::path_not_found);
  put_file(at("plain"), "x");
  auto f = list_raw(sys(), files.handle(), "plain", 3);
  CAF_REQUIRE_EQUAL(f.dones.size(), 1u);
  CAF_CHECK(code_of(f.dones[0].error) == errc::path_not_found);
  auto bad = list_raw(sys(), files.handle(), "", 3);
  CAF_REQUIRE_EQUAL(bad.dones.size(), 1u);
  CAF_CHECK(code_of(bad.dones[0].error) == errc::invalid_argument);
  auto facade = files.list("missing", 0, {});
  CAF_REQUIRE(facade.error.has_value());
  CAF_CHECK(facade.error->code == errc::path_not_found);
}

CAF_TEST(S16 permission denied ends with one done after the frames before) {
  CAF_REQUIRE_EQUAL(::chmod(dir.path.c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::mkdir(at("p").c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::mkdir(at("p/a").c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::mkdir(at("p/b").c_str(), 0700), 0);
  put_file(at("p/b/inner"), "i");
  put_file(at("p/c"), "c");
  CAF_REQUIRE_EQUAL(::mkdir(at("closed").c_str(), 0700), 0);
  sandbox::test::as_nobody([&] {
    auto r = list_raw(sys(), files.handle(), "p", 5);
    CAF_CHECK_EQUAL(paths_of(r.frames), (std::vector<std::string>{"a", "b"}));
    CAF_REQUIRE_EQUAL(r.dones.size(), 1u);
    CAF_CHECK_EQUAL(r.late_batches, 0u);
    CAF_CHECK(code_of(r.dones[0].error) == errc::permission_denied);
    CAF_CHECK_EQUAL(r.dones[0].count, 2u);
    auto root = list_raw(sys(), files.handle(), "closed", 1);
    CAF_CHECK(root.frames.empty());
    CAF_REQUIRE_EQUAL(root.dones.size(), 1u);
    CAF_CHECK(code_of(root.dones[0].error) == errc::permission_denied);
    return 0;
  });
}

CAF_TEST(S16 a cancelled listing ends with one done and sends no more) {
  CAF_REQUIRE_EQUAL(::mkdir(at("many").c_str(), 0755), 0);
  for (int i = 0; i < 1000; ++i)
    put_file(at(fmt::format("many/f{:04}", i)), "");
  auto r = list_raw(sys(), files.handle(), "many", 1, 2);
  CAF_CHECK_EQUAL(r.frames.size(), actors::max_list_batch);
  CAF_REQUIRE_EQUAL(r.dones.size(), 1u);
  CAF_CHECK_EQUAL(r.late_batches, 0u);
  CAF_CHECK(code_of(r.dones[0].error) == errc::aborted);
  CAF_CHECK_EQUAL(r.dones[0].count, actors::max_list_batch);
  // Through the facade: the callback says stop.
  size_t seen = 0;
  auto done = files.list("many", 1,
                         [&](const fs::frame&) { return ++seen < 10; });
  CAF_CHECK_EQUAL(seen, 10u);
  CAF_REQUIRE(done.error.has_value());
  CAF_CHECK(done.error->code == errc::aborted);
  CAF_CHECK_EQUAL(done.count, 0u);
  // The worker is free for the next listing.
  CAF_CHECK_EQUAL(files.list("many", 1, {}).count, 1000u);
}

CAF_TEST(S16 the worker reads no further until the sink acks) {
  CAF_REQUIRE_EQUAL(::mkdir(at("slow").c_str(), 0755), 0);
  for (int i = 0; i < 600; ++i)
    put_file(at(fmt::format("slow/f{:03}", i)), "");
  caf::scoped_actor self{sys()};
  auto worker = files.handle();
  auto me = caf::actor_cast<caf::actor>(self);
  auto sink = caf::actor_cast<actors::frame_sink>(self);
  sys().spawn([=](caf::event_based_actor* relay) {
    relay
      ->request(worker, caf::infinite, actors::list_atom_v, std::string{"slow"},
                uint32_t{1}, sink)
      .then([=](actors::list_done& d) { relay->send(me, d); });
  });
  caf::response_promise held;
  size_t frames = 0;
  self->receive([&](actors::frames_atom, std::vector<fs::frame>& batch) {
    frames += batch.size();
    held = self->make_response_promise();
  });
  // The worker answers in order: after this reply, a second batch would
  // already be in our mailbox if the worker had read ahead.
  self->request(worker, caf::infinite, actors::stat_atom_v, std::string{"slow"})
    .receive([](fs::file_stat&) {}, [](caf::error& err) { CAF_FAIL(err); });
  size_t early = 0;
  self->receive([&](actors::frames_atom, std::vector<fs::frame>&) { ++early; },
                caf::after(std::chrono::seconds(0)) >> [] {});
  CAF_CHECK_EQUAL(early, 0u);
  held.deliver(actors::ack_atom_v);
  bool done = false;
  self->receive_while([&] { return !done; })(
    [&](actors::frames_atom, std::vector<fs::frame>& batch) {
      frames += batch.size();
      return actors::ack_atom_v;
    },
    [&](actors::list_done& d) {
      CAF_CHECK(!d.error);
      CAF_CHECK_EQUAL(d.count, 600u);
      done = true;
    });
  CAF_CHECK_EQUAL(frames, 600u);
}

CAF_TEST(S16 a stop mid listing ends it with one done) {
  CAF_REQUIRE_EQUAL(::mkdir(at("stop").c_str(), 0755), 0);
  for (int i = 0; i < 600; ++i)
    put_file(at(fmt::format("stop/f{:03}", i)), "");
  size_t seen = 0;
  auto other = actors::blocking_session{node.system(), session.handle()};
  auto done = files.list("stop", 1, [&](const fs::frame&) {
    // Stop from inside the first batch: the listing is in flight.
    if (++seen == 1)
      CAF_CHECK(other.stop().has_value());
    return true;
  });
  CAF_CHECK_EQUAL(seen, actors::max_list_batch);
  CAF_REQUIRE(done.error.has_value());
  CAF_CHECK(done.error->code == errc::session_stopped);
  CAF_CHECK_EQUAL(done.count, actors::max_list_batch);
}

CAF_TEST(S16 symlink loops do not make the walk loop) {
  CAF_REQUIRE_EQUAL(::mkdir(at("loops").c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::mkdir(at("loops/sub").c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::symlink(".", at("loops/self").c_str()), 0);
  CAF_REQUIRE_EQUAL(::symlink("..", at("loops/sub/up").c_str()), 0);
  CAF_REQUIRE_EQUAL(::symlink("y", at("loops/x").c_str()), 0);
  CAF_REQUIRE_EQUAL(::symlink("x", at("loops/y").c_str()), 0);
  auto r = list_raw(sys(), files.handle(), "loops", 1000);
  CAF_REQUIRE_EQUAL(r.dones.size(), 1u);
  CAF_CHECK(!r.dones[0].error);
  CAF_CHECK_EQUAL(paths_of(r.frames), (std::vector<std::string>{
                                        "self", "sub", "sub/up", "x", "y"}));
  for (auto& f : r.frames)
    if (f.name != "sub")
      CAF_CHECK(f.kind == fs::file_kind::symlink);
  // A looping root is not a directory.
  auto root = list_raw(sys(), files.handle(), "loops/x", 1);
  CAF_REQUIRE_EQUAL(root.dones.size(), 1u);
  CAF_CHECK(root.dones[0].error);
}

CAF_TEST(S16 a 200000 entry tree lists in bounded memory) {
  SANDBOX_SKIP_MEMORY_TEST_IF_SANITIZED();
  // 100 directories of 2000 names each, all but one per directory hard
  // links (ext4 allows 65000 per inode): fast to create, and each
  // directory is small next to the tree.
  constexpr int dirs = 100;
  constexpr int per_dir = 2000;
  CAF_REQUIRE_EQUAL(::mkdir(at("big").c_str(), 0755), 0);
  for (int d = 0; d < dirs; ++d) {
    auto sub = at(fmt::format("big/d{:03}", d));
    CAF_REQUIRE_EQUAL(::mkdir(sub.c_str(), 0755), 0);
    auto seed = sub + "/f0000";
    put_file(seed, "seed");
    for (int i = 1; i < per_dir; ++i) {
      auto name = fmt::format("{}/f{:04}", sub, i);
      if (::link(seed.c_str(), name.c_str()) != 0)
        CAF_FAIL("cannot link " << name);
    }
  }
  auto before = sandbox::resident_bytes();
  size_t peak = before;
  uint64_t frames = 0;
  uint64_t files_seen = 0;
  std::string last;
  bool ordered = true;
  auto done = files.list("big", 2, [&](const fs::frame& f) {
    if (++frames % 4096 == 0)
      peak = std::max(peak, sandbox::resident_bytes());
    if (f.kind == fs::file_kind::file)
      ++files_seen;
    // Pre-order with sorted siblings: the paths ascend.
    if (!last.empty() && !(last < f.path))
      ordered = false;
    last = f.path;
    return true;
  });
  peak = std::max(peak, sandbox::resident_bytes());
  CAF_CHECK(!done.error);
  CAF_CHECK_EQUAL(done.count, uint64_t{dirs} * per_dir + dirs);
  CAF_CHECK_EQUAL(frames, done.count);
  CAF_CHECK_EQUAL(files_seen, uint64_t{dirs} * per_dir);
  CAF_CHECK(ordered);
  auto growth = peak > before ? peak - before : 0;
  CAF_MESSAGE("resident memory grew by " << growth / 1024 << " KiB");
  SANDBOX_CHECK_MEMORY_BOUND(growth, size_t{32} * 1024 * 1024);
}

CAF_TEST_FIXTURE_SCOPE_END()
