#define CAF_SUITE actors.filesystem
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <sys/socket.h>
#include <sys/un.h>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/message.hpp>

#include "filesystem_fixture.hpp"
#include "sandbox/actors/registration.hpp"

using sandbox::errc;
using sandbox::test::code;
using sandbox::test::get_file;
using sandbox::test::put_file;
using sandbox::test::temp_files_in;
namespace actors = sandbox::actors;
namespace fs = sandbox::fs;

namespace {

/// Serializes `x` and reads it back.
template <class T>
T round_trip(caf::actor_system& sys, T x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  if (auto err = sink(x))
    CAF_FAIL("serializing failed: " << sys.render(err));
  T y;
  caf::binary_deserializer source{sys, buf};
  if (auto err = source(y))
    CAF_FAIL("deserializing failed: " << sys.render(err));
  return y;
}

std::string all_bytes() {
  std::string bytes;
  for (int i = 0; i < 256; ++i)
    bytes += static_cast<char>(i);
  return bytes;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(filesystem_tests, sandbox::test::files_fixture)

CAF_TEST(every filesystem message type survives a binary round trip) {
  fs::file_stat st{fs::file_kind::symlink, 7, -42, 2049, 1234567,
                   "0123456789abcdef"};
  auto st2 = round_trip(sys(), st);
  CAF_CHECK(st2.kind == fs::file_kind::symlink);
  CAF_CHECK_EQUAL(st2.size, 7u);
  CAF_CHECK_EQUAL(st2.mtime_ns, -42);
  CAF_CHECK_EQUAL(st2.dev, 2049u);
  CAF_CHECK_EQUAL(st2.ino, 1234567u);
  CAF_CHECK_EQUAL(st2.version, "0123456789abcdef");
  fs::dir_entry e{"n\xff", true, true, 99};
  auto entries = round_trip(sys(), std::vector<fs::dir_entry>{e, {}});
  CAF_REQUIRE_EQUAL(entries.size(), 2u);
  CAF_CHECK_EQUAL(entries[0].name, "n\xff");
  CAF_CHECK(entries[0].has_metadata && entries[0].is_dir);
  CAF_CHECK_EQUAL(entries[0].size, 99u);
  CAF_CHECK(!entries[1].has_metadata);
  CAF_CHECK_EQUAL(round_trip(sys(), e).name, "n\xff");
  fs::frame f{"a/b", "b", fs::file_kind::other, 5};
  auto frames = round_trip(sys(), std::vector<fs::frame>{f});
  CAF_REQUIRE_EQUAL(frames.size(), 1u);
  CAF_CHECK_EQUAL(frames[0].path, "a/b");
  CAF_CHECK_EQUAL(frames[0].name, "b");
  CAF_CHECK(frames[0].kind == fs::file_kind::other);
  CAF_CHECK_EQUAL(frames[0].size, 5u);
  CAF_CHECK_EQUAL(round_trip(sys(), f).path, "a/b");
  actors::write_options none;
  CAF_CHECK(!round_trip(sys(), none).if_version);
  actors::write_options empty;
  empty.if_version = std::string{};
  auto empty2 = round_trip(sys(), empty);
  CAF_REQUIRE(empty2.if_version);
  CAF_CHECK_EQUAL(*empty2.if_version, "");
  actors::write_options v;
  v.if_version = std::string{"00ff"};
  auto v2 = round_trip(sys(), v);
  CAF_REQUIRE(v2.if_version);
  CAF_CHECK_EQUAL(*v2.if_version, "00ff");
  actors::list_done ok{3, {}};
  auto ok2 = round_trip(sys(), ok);
  CAF_CHECK_EQUAL(ok2.count, 3u);
  CAF_CHECK(!ok2.error);
  actors::list_done failed{1, caf::make_error(errc::permission_denied,
                                              std::string{"list x: no"})};
  auto failed2 = round_trip(sys(), failed);
  CAF_CHECK_EQUAL(failed2.count, 1u);
  CAF_CHECK(sandbox::test::code_of(failed2.error) == errc::permission_denied);
  CAF_CHECK_EQUAL(actors::error_message(failed2.error), "list x: no");
}

CAF_TEST(filesystem messages and handles are registered) {
  // A whole message serializes only when every element type is registered.
  auto msg = caf::make_message(actors::frames_atom_v,
                               std::vector<fs::frame>{{"a", "a", {}, 1}},
                               actors::list_done{1, {}},
                               std::vector<fs::dir_entry>{{}}, fs::file_stat{},
                               actors::write_options{});
  auto msg2 = round_trip(sys(), msg);
  CAF_CHECK_EQUAL(msg2.size(), 6u);
  CAF_CHECK(msg2.match_element<std::vector<fs::frame>>(1));
  for (std::string name :
       {"sandbox::actors::filesystem_actor", "sandbox::actors::byte_sink",
        "sandbox::actors::frame_sink"}) {
    CAF_MESSAGE("handle type " << name);
    CAF_CHECK(sys().types().make_value(name) != nullptr);
  }
}

CAF_TEST(S11 a binary file round trips all 256 byte values) {
  auto bytes = all_bytes();
  CAF_REQUIRE_EQUAL(code(files.write_file("bin/all", bytes)), "ok");
  CAF_CHECK_EQUAL(get_file(at("bin/all")), bytes);
  CAF_CHECK_EQUAL(files.read_file("bin/all").value(), bytes);
  std::string streamed;
  auto total = files.read_stream(
    "bin/all",
    [&](const std::string& chunk) {
      streamed += chunk;
      return true;
    },
    7);
  CAF_CHECK_EQUAL(total.value(), 256u);
  CAF_CHECK_EQUAL(streamed, bytes);
  // The same bytes through a streamed write, in odd-sized chunks.
  auto w = files.open_write("bin/streamed");
  CAF_REQUIRE_EQUAL(code(w), "ok");
  for (size_t i = 0; i < bytes.size(); i += 100)
    CAF_REQUIRE_EQUAL(code(w->write(bytes.substr(i, 100))), "ok");
  CAF_REQUIRE_EQUAL(code(w->commit()), "ok");
  CAF_CHECK_EQUAL(w->bytes(), 256u);
  CAF_CHECK_EQUAL(files.read_file("bin/streamed").value(), bytes);
}

CAF_TEST(S11 relative paths resolve against the working directory) {
  put_file(at("rel.txt"), "relative");
  CAF_CHECK_EQUAL(files.read_file("rel.txt").value(), "relative");
  CAF_CHECK_EQUAL(files.read_file("./x/../rel.txt").value(), "relative");
  CAF_CHECK_EQUAL(files.read_file(at("rel.txt")).value(), "relative");
  CAF_CHECK_EQUAL(files.read_file("../work/rel.txt").value(), "relative");
  CAF_CHECK_EQUAL(code(files.read_file("")), "invalid_argument");
  CAF_CHECK_EQUAL(code(files.read_file(std::string{"a\0b", 3})),
                  "invalid_argument");
}

CAF_TEST(S11 reads of missing and non - regular files fail with their codes) {
  CAF_CHECK_EQUAL(code(files.read_file("missing")), "path_not_found");
  CAF_CHECK_EQUAL(code(files.read_text("missing", 1, 2)), "path_not_found");
  CAF_CHECK_EQUAL(code(files.read_stream("missing", {})), "path_not_found");
  CAF_CHECK_EQUAL(code(files.read_file("missing/deeper")), "path_not_found");
  CAF_REQUIRE_EQUAL(::mkdir(at("dir").c_str(), 0755), 0);
  CAF_CHECK_EQUAL(code(files.read_file("dir")), "not_a_regular_file");
  CAF_CHECK_EQUAL(code(files.read_stream("dir", {})), "not_a_regular_file");
  CAF_CHECK_EQUAL(code(files.read_file("/dev/null")), "not_a_regular_file");
  // A socket file.
  auto sock_path = at("sock");
  auto fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  CAF_REQUIRE(sock_path.size() < sizeof(addr.sun_path));
  std::copy(sock_path.begin(), sock_path.end(), addr.sun_path);
  CAF_REQUIRE_EQUAL(
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  CAF_CHECK_EQUAL(code(files.read_file("sock")), "not_a_regular_file");
  ::close(fd);
}

CAF_TEST(S11 reading a FIFO with no writer fails at once) {
  CAF_REQUIRE_EQUAL(::mkfifo(at("fifo").c_str(), 0644), 0);
  // No writer will ever open the FIFO: a blocking open would hang the
  // worker, and this test with it.
  CAF_CHECK_EQUAL(code(files.read_file("fifo")), "not_a_regular_file");
  CAF_CHECK_EQUAL(code(files.read_text("fifo", 1, 0)), "not_a_regular_file");
  CAF_CHECK_EQUAL(code(files.read_stream("fifo", {})), "not_a_regular_file");
  auto st = files.stat("fifo");
  CAF_REQUIRE_EQUAL(code(st), "ok");
  CAF_CHECK(st->kind == fs::file_kind::other);
  // The worker still answers.
  put_file(at("after"), "fine");
  CAF_CHECK_EQUAL(files.read_file("after").value(), "fine");
}

CAF_TEST(S11 read_text selects 1 - based inclusive lines) {
  put_file(at("lines"), "one\ntwo\nthree\nfour");
  CAF_CHECK_EQUAL(files.read_text("lines", 1, 1).value(), "one\n");
  CAF_CHECK_EQUAL(files.read_text("lines", 2, 3).value(), "two\nthree\n");
  CAF_CHECK_EQUAL(files.read_text("lines", 3, 0).value(), "three\nfour");
  CAF_CHECK_EQUAL(files.read_text("lines", 4, 9).value(), "four");
  CAF_CHECK_EQUAL(files.read_text("lines", 9, 9).value(), "");
  CAF_CHECK_EQUAL(code(files.read_text("lines", 0, 1)), "invalid_argument");
  CAF_CHECK_EQUAL(code(files.read_text("lines", 3, 2)), "invalid_argument");
}

CAF_TEST(S12 every read stream is fresh and ends with one done) {
  std::string content(100000, 'x');
  content += "end";
  put_file(at("s"), content);
  for (int round = 0; round < 2; ++round) {
    std::string got;
    size_t chunks = 0;
    auto total = files.read_stream(
      "s",
      [&](const std::string& chunk) {
        CAF_CHECK(chunk.size() <= 4096u);
        got += chunk;
        ++chunks;
        return true;
      },
      4096);
    CAF_CHECK_EQUAL(total.value(), content.size());
    CAF_CHECK_EQUAL(got, content);
    CAF_CHECK_EQUAL(chunks, (content.size() + 4095) / 4096);
  }
  // An empty file: no chunk, just the done.
  put_file(at("empty"), "");
  size_t chunks = 0;
  auto total = files.read_stream("empty", [&](const std::string&) {
    ++chunks;
    return true;
  });
  CAF_CHECK_EQUAL(total.value(), 0u);
  CAF_CHECK_EQUAL(chunks, 0u);
}

CAF_TEST(S12 a read stream waits for acks and can be cancelled) {
  put_file(at("slow"), std::string(3 * 4096, 's'));
  caf::scoped_actor self{sys()};
  auto me = caf::actor_cast<caf::actor>(self);
  auto worker = files.handle();
  auto sink = caf::actor_cast<actors::byte_sink>(self);
  sys().spawn([=](caf::event_based_actor* relay) {
    relay
      ->request(worker, caf::infinite, actors::read_stream_atom_v,
                std::string{"slow"}, uint32_t{4096}, sink)
      .then([=](uint64_t n) { relay->send(me, n); },
            [=](caf::error& err) { relay->send(me, err); });
  });
  // Hold the first chunk without answering it.
  caf::response_promise held;
  self->receive([&](actors::chunk_atom, std::string& chunk) {
    CAF_CHECK_EQUAL(chunk.size(), 4096u);
    held = self->make_response_promise();
  });
  // The worker answers other requests meanwhile and has not sent more.
  self->request(worker, caf::infinite, actors::stat_atom_v, std::string{"slow"})
    .receive([](fs::file_stat& st) { CAF_CHECK_EQUAL(st.size, 3u * 4096); },
             [](caf::error& err) { CAF_FAIL(err); });
  size_t early = 0;
  self->receive([&](actors::chunk_atom, std::string&) { ++early; },
                caf::after(std::chrono::seconds(0)) >> [] {});
  CAF_CHECK_EQUAL(early, 0u);
  held.deliver(actors::ack_atom_v);
  // Cancel at the second chunk: the stream ends with the error, once.
  self->receive(
    [&](actors::chunk_atom, std::string&) -> caf::result<actors::ack_atom> {
      return caf::make_error(errc::aborted, "enough");
    });
  self->receive([](uint64_t) { CAF_FAIL("the stream did not end early"); },
                [](caf::error& err) {
                  CAF_CHECK(sandbox::test::code_of(err) == errc::aborted);
                });
  // The facade cancels through its callback.
  size_t seen = 0;
  auto r = files.read_stream(
    "slow", [&](const std::string&) { return ++seen < 2; }, 4096);
  CAF_CHECK_EQUAL(code(r), "aborted");
  CAF_CHECK_EQUAL(seen, 2u);
}

CAF_TEST(S14 remove_file removes files and symlinks but not directories) {
  put_file(at("gone"), "x");
  CAF_CHECK_EQUAL(code(files.remove_file("gone")), "ok");
  CAF_CHECK_EQUAL(::access(at("gone").c_str(), F_OK), -1);
  CAF_CHECK_EQUAL(code(files.remove_file("gone")), "path_not_found");
  put_file(at("target"), "t");
  CAF_REQUIRE_EQUAL(::symlink("target", at("link").c_str()), 0);
  CAF_CHECK_EQUAL(code(files.remove_file("link")), "ok");
  CAF_CHECK_EQUAL(get_file(at("target")), "t");
  CAF_REQUIRE_EQUAL(::mkdir(at("d").c_str(), 0755), 0);
  CAF_CHECK_EQUAL(code(files.remove_file("d")), "not_a_regular_file");
}

CAF_TEST(S15 list_files sorts by bytes and keeps entries without metadata) {
  CAF_REQUIRE_EQUAL(::mkdir(at("l").c_str(), 0755), 0);
  put_file(at("l/b"), "12345");
  put_file(at("l/B"), "");
  put_file(at("l/\xc3\xa9"), "e");
  CAF_REQUIRE_EQUAL(::mkdir(at("l/a").c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::symlink("nowhere", at("l/dangling").c_str()), 0);
  auto entries = files.list_files("l");
  CAF_REQUIRE_EQUAL(code(entries), "ok");
  std::vector<std::string> names;
  for (auto& e : *entries)
    names.push_back(e.name);
  CAF_CHECK_EQUAL(
    names, (std::vector<std::string>{"B", "a", "b", "dangling", "\xc3\xa9"}));
  CAF_CHECK((*entries)[1].is_dir);
  CAF_CHECK_EQUAL((*entries)[2].size, 5u);
  CAF_CHECK(!(*entries)[3].has_metadata);
  CAF_CHECK_EQUAL(code(files.list_files("nope")), "path_not_found");
  CAF_CHECK_EQUAL(code(files.list_files("l/b")), "path_not_found");
}

CAF_TEST(S17 stat reports the path itself and a changing version) {
  put_file(at("st"), "abc");
  auto a = files.stat("st");
  CAF_REQUIRE_EQUAL(code(a), "ok");
  CAF_CHECK(a->kind == fs::file_kind::file);
  CAF_CHECK_EQUAL(a->size, 3u);
  CAF_CHECK_EQUAL(a->version.size(), 16u);
  CAF_CHECK_EQUAL(files.stat("st").value().version, a->version);
  CAF_REQUIRE_EQUAL(::chmod(at("st").c_str(), 0600), 0);
  auto b = files.stat("st").value();
  CAF_CHECK_NOT_EQUAL(b.version, a->version);
  CAF_REQUIRE_EQUAL(::symlink("st", at("ln").c_str()), 0);
  auto l = files.stat("ln").value();
  CAF_CHECK(l.kind == fs::file_kind::symlink);
  CAF_CHECK_EQUAL(l.size, 2u);
  CAF_CHECK(files.stat(".").value().kind == fs::file_kind::dir);
  CAF_CHECK_EQUAL(code(files.stat("nope")), "path_not_found");
}

CAF_TEST(permission errors stay permission_denied) {
  // Let nobody reach the working directory, but not what is locked below.
  CAF_REQUIRE_EQUAL(::chmod(dir.path.c_str(), 0755), 0);
  put_file(at("secret"), "s");
  CAF_REQUIRE_EQUAL(::chmod(at("secret").c_str(), 0600), 0);
  CAF_REQUIRE_EQUAL(::mkdir(at("locked").c_str(), 0700), 0);
  put_file(at("locked/inner"), "i");
  sandbox::test::as_nobody([&] {
    CAF_CHECK_EQUAL(code(files.read_file("secret")), "permission_denied");
    CAF_CHECK_EQUAL(code(files.read_text("secret", 1, 1)), "permission_denied");
    CAF_CHECK_EQUAL(code(files.read_stream("secret", {})), "permission_denied");
    CAF_CHECK_EQUAL(code(files.stat("locked/inner")), "permission_denied");
    CAF_CHECK_EQUAL(code(files.list_files("locked")), "permission_denied");
    CAF_CHECK_EQUAL(code(files.write_file("new", "n")), "permission_denied");
    CAF_CHECK_EQUAL(code(files.open_write("locked/x")), "permission_denied");
    CAF_CHECK_EQUAL(code(files.remove_file("secret")), "permission_denied");
    return 0;
  });
  CAF_CHECK_EQUAL(get_file(at("secret")), "s");
}

CAF_TEST(the worker is an actor whose file I O runs on the file threads) {
  // No thread of its own: the node's file pool does its blocking I/O.
  auto ptr = caf::actor_cast<caf::abstract_actor*>(files.handle());
  CAF_REQUIRE(ptr != nullptr);
  CAF_CHECK(!ptr->getf(caf::abstract_actor::is_detached_flag));
  // A read stream parked on a sink that does not answer leaves the session
  // and the worker responsive.
  put_file(at("park"), std::string(10000, 'p'));
  caf::scoped_actor sink_self{sys()};
  auto sink = caf::actor_cast<actors::byte_sink>(sink_self);
  auto worker = files.handle();
  caf::scoped_actor self{sys()};
  self->send(worker, actors::read_stream_atom_v, std::string{"park"},
             uint32_t{100}, sink);
  caf::response_promise held;
  sink_self->receive([&](actors::chunk_atom, std::string&) {
    held = sink_self->make_response_promise();
  });
  CAF_CHECK(session.info().has_value());
  CAF_CHECK_EQUAL(files.read_file("park").value().size(), 10000u);
  held.deliver(caf::make_error(errc::aborted, "done here"));
}

CAF_TEST(no operation leaves a file descriptor open) {
  put_file(at("fd"), std::string(100000, 'f'));
  CAF_REQUIRE_EQUAL(::mkdir(at("fdd").c_str(), 0755), 0);
  for (int i = 0; i < 600; ++i)
    put_file(at("fdd/" + std::to_string(i)), "");
  auto round = [&] {
    (void) files.read_file("fd");
    (void) files.read_file("missing");
    (void) files.read_text("fd", 1, 1);
    (void) files.read_stream("fd", {}, 1000);
    (void) files.read_stream("fd", [](const std::string&) { return false; });
    (void) files.write_file("fdw", "x");
    (void) files.write_file("fdw", "x", std::string{"stale"});
    {
      auto w = files.open_write("fdw");
      SANDBOX_REQUIRE_OK(w);
      (void) w->write("partial");
    }
    (void) files.list_files("fdd");
    (void) files.list("fdd", 2, {});
    (void) files.list("fdd", 2, [](const fs::frame&) { return false; });
    (void) files.stat("fd");
    // The worker answers in order: once this reply is in, every job above
    // has released its descriptors.
    (void) files.stat("fd");
  };
  round();
  auto before = sandbox::open_fd_count();
  for (int i = 0; i < 5; ++i)
    round();
  CAF_CHECK_EQUAL(sandbox::open_fd_count(), before);
  CAF_CHECK_EQUAL(temp_files_in(wd), 0u);
}

CAF_TEST(A15 a trailing slash names a directory as in POSIX) {
  put_file(at("f1"), "one");
  put_file(at("f2"), "two");
  CAF_REQUIRE_EQUAL(::mkdir(at("d").c_str(), 0755), 0);
  CAF_REQUIRE_EQUAL(::symlink("d", at("dirlink").c_str()), 0);
  auto rm = files.remove_file("f1/");
  CAF_CHECK_EQUAL(code(rm), "path_not_found");
  if (!rm)
    CAF_CHECK_NOT_EQUAL(rm.error().message.find("Not a directory"),
                        std::string::npos);
  CAF_CHECK_EQUAL(get_file(at("f1")), "one");
  CAF_CHECK_EQUAL(code(files.read_file("f2/")), "path_not_found");
  CAF_CHECK_EQUAL(code(files.read_text("f2/", 1, 0)), "path_not_found");
  CAF_CHECK_EQUAL(code(files.read_stream("f2/", {})), "path_not_found");
  CAF_CHECK_EQUAL(code(files.stat("f2/")), "path_not_found");
  CAF_CHECK_EQUAL(code(files.stat("f2/.")), "path_not_found");
  CAF_CHECK_EQUAL(code(files.write_file("newthing/", "x")), "invalid_argument");
  CAF_CHECK_EQUAL(::access(at("newthing").c_str(), F_OK), -1);
  CAF_CHECK_EQUAL(code(files.write_file("f2/", "x")), "invalid_argument");
  CAF_CHECK_EQUAL(get_file(at("f2")), "two");
  CAF_CHECK_EQUAL(code(files.remove_file("dirlink/")), "not_a_regular_file");
  struct ::stat st;
  CAF_CHECK_EQUAL(::lstat(at("dirlink").c_str(), &st), 0);
  auto through = files.stat("dirlink/");
  CAF_REQUIRE_EQUAL(code(through), "ok");
  CAF_CHECK(through->kind == sandbox::fs::file_kind::dir);
  auto link = files.stat("dirlink");
  CAF_REQUIRE_EQUAL(code(link), "ok");
  CAF_CHECK(link->kind == sandbox::fs::file_kind::symlink);
  CAF_CHECK_EQUAL(code(files.list_files("dirlink/")), "ok");
  CAF_CHECK_EQUAL(code(files.list_files("f1/")), "path_not_found");
  CAF_CHECK_EQUAL(code(files.stat("d/")), "ok");
}

CAF_TEST(after stop every worker request fails with session_stopped) {
  put_file(at("f"), "x");
  auto w = files.open_write("pending");
  CAF_REQUIRE_EQUAL(code(w), "ok");
  CAF_REQUIRE_EQUAL(code(w->write("partial")), "ok");
  auto w2 = files.open_write("pending2");
  CAF_REQUIRE_EQUAL(code(w2), "ok");
  CAF_REQUIRE(session.stop().has_value());
  auto stopped = std::string{"session_stopped"};
  CAF_CHECK_EQUAL(code(files.read_file("f")), stopped);
  CAF_CHECK_EQUAL(code(files.read_text("f", 1, 1)), stopped);
  CAF_CHECK_EQUAL(code(files.read_stream("f", {})), stopped);
  CAF_CHECK_EQUAL(code(files.write_file("f", "y")), stopped);
  CAF_CHECK_EQUAL(code(files.open_write("g")), stopped);
  CAF_CHECK_EQUAL(code(files.remove_file("f")), stopped);
  CAF_CHECK_EQUAL(code(files.list_files(".")), stopped);
  CAF_CHECK_EQUAL(code(files.stat("f")), stopped);
  CAF_CHECK_EQUAL(code(files.abort_write(w->id())), stopped);
  auto done = files.list(".", 1, {});
  CAF_REQUIRE(done.error.has_value());
  CAF_CHECK(done.error->code == errc::session_stopped);
  CAF_CHECK_EQUAL(done.count, 0u);
  // The open write was dropped at the stop; the file stays as it was.
  CAF_CHECK_EQUAL(code(w->write("more")), stopped);
  // A22: the commit after the stop says why, also after a failed write.
  CAF_CHECK_EQUAL(code(w->commit()), stopped);
  CAF_CHECK_EQUAL(code(w2->commit()), stopped);
  CAF_CHECK_EQUAL(::access(at("pending").c_str(), F_OK), -1);
  CAF_CHECK_EQUAL(::access(at("pending2").c_str(), F_OK), -1);
  CAF_CHECK_EQUAL(temp_files_in(wd), 0u);
  CAF_CHECK_EQUAL(get_file(at("f")), "x");
  CAF_CHECK_EQUAL(code(actors::files_of(session)), stopped);
}

CAF_TEST_FIXTURE_SCOPE_END()
