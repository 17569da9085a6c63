#define CAF_SUITE cli.reattach
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Lossless reattach (docs/processes.md): a process of a served node prints
// numbered lines; a reader attaches with the CLI over --node from where it
// left off, reads a random amount, and goes away (SIGKILL for half the
// rounds, SIGINT, its detach, for the others) 50 times; the bytes read,
// put together, are the output byte for byte. With a retention smaller
// than the output, each gap reported is exactly what the log dropped and
// what follows it still matches. `make test` runs it with 16 MiB of
// output; `cli.reattach.stress` (make test-stress) with 200 MiB.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "helpers/byte_pattern.hpp"
#include "helpers/scale.hpp"
#include "helpers/serve_process.hpp"

using sandbox::test::json_lines;
using sandbox::test::numbered_lines;
using sandbox::test::run_shell;
using sandbox::test::serve_process;

namespace {

/// A session on an own served node; `cli(args)` runs the real CLI in it.
struct fixture {
  serve_process node;
  std::string session;

  fixture() {
    auto created = cli_raw("--json session create");
    if (created.status != 0)
      throw std::runtime_error("session create failed: " + created.out);
    session = json_lines(created.out).at(0)["id"].get<std::string>();
  }

  ~fixture() {
    (void) cli_raw("session stop " + session);
  }

  std::string prefix() const {
    return std::string{SANDBOX_CLI} + " --node " + node.address;
  }

  sandbox::test::cli_result cli_raw(const std::string& args) {
    return run_shell(prefix() + " " + args + " 2>&1");
  }

  sandbox::test::cli_result cli(const std::string& args) {
    return run_shell(prefix() + " --session " + session + " " + args + " 2>&1");
  }

  /// `attach ID --from OFFSET`: reads up to `want` bytes of its stdout,
  /// then ends it with `sig` (or reads to its end when `sig` is 0). The
  /// bytes read.
  std::string attach_some(const std::string& id, uint64_t offset, size_t want,
                          int sig) {
    std::vector<std::string> args{
      SANDBOX_CLI, "--node", node.address, "--session",           session,
      "attach",    id,       "--from",     std::to_string(offset)};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    CAF_REQUIRE_EQUAL(::pipe2(fds, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    auto rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    CAF_REQUIRE_EQUAL(rc, 0);
    std::string got;
    std::vector<char> buf(1 << 16);
    while (sig == 0 || got.size() < want) {
      auto room = sig == 0 ? buf.size()
                           : std::min(buf.size(), want - got.size());
      auto n = ::read(fds[0], buf.data(), room);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got.append(buf.data(), static_cast<size_t>(n));
    }
    if (sig != 0)
      ::kill(pid, sig);
    ::close(fds[0]);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR)
      ;
    return got;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(reattach_tests, fixture)

CAF_TEST(fifty reattaches over node with sigkill and sigint lose nothing) {
  // The process prints its lines in blocks, each once it reads a line:
  // the reader lets it run ahead by at most two blocks, within the
  // retention, as a reader that keeps up does.
  const uint64_t lines = sandbox::test::sized<uint64_t>(2'000'000, 24'000'000);
  const uint64_t blocks = 25;
  const uint64_t per_block = lines / blocks;
  const uint64_t retain = sandbox::test::sized<uint64_t>(8 << 20, 64 << 20);
  auto expected = numbered_lines(1, lines);
  std::vector<uint64_t> block_end;
  for (uint64_t b = 1, bytes = 0, n = 1; b <= blocks; ++b) {
    for (; n <= b * per_block; ++n)
      bytes += std::to_string(n).size() + 1;
    block_end.push_back(bytes);
  }
  auto script = "i=0; while [ $i -lt " + std::to_string(blocks)
                + " ] && read go; do seq $((i*" + std::to_string(per_block)
                + "+1)) $(((i+1)*" + std::to_string(per_block)
                + ")); i=$((i+1)); done";
  auto started = cli("--json run --detach --stdin --retain "
                     + std::to_string(retain) + " -- '" + script + "'");
  CAF_REQUIRE_EQUAL(started.status, 0);
  auto id = json_lines(started.out).at(0)["id"].get<std::string>();
  uint64_t released = 0;
  auto release_up_to = [&](uint64_t offset) {
    std::string go;
    while (released < blocks
           && (released < 2 || block_end[released - 2] <= offset)) {
      go += "go\\n";
      ++released;
    }
    if (go.empty())
      return;
    auto sent = run_shell("printf '" + go + "' | " + prefix() + " --session "
                          + session + " send " + id);
    CAF_REQUIRE_EQUAL(sent.status, 0);
  };
  std::mt19937_64 rng{20261206};
  std::string got;
  release_up_to(0);
  for (int round = 0; round < 50; ++round) {
    // Up to twice the average share of a round, at least one byte.
    auto share = expected.size() / 50;
    auto want = std::uniform_int_distribution<size_t>{1, 2 * share}(rng);
    // No more than the process was let print: the attach would wait.
    auto printed = block_end[released - 1];
    want = std::min<size_t>(want, printed - got.size());
    auto sig = round % 2 == 0 ? SIGKILL : SIGINT;
    auto part = attach_some(id, got.size(), want, sig);
    REQUIRE_THAT(part.size() == want
                   && expected.compare(got.size(), part.size(), part) == 0,
                 "round " << round << ": " << part.size() << " of " << want
                          << " bytes from offset " << got.size()
                          << ", or not the output's");
    got += part;
    release_up_to(got.size());
  }
  release_up_to(expected.size());
  // The rest, followed to the process's end.
  got += attach_some(id, got.size(), 0, 0);
  CAF_CHECK_EQUAL(got.size(), expected.size());
  CAF_CHECK(got == expected);
}

CAF_TEST(past a small retention each gap is exactly the bytes dropped) {
  const uint64_t lines = sandbox::test::sized<uint64_t>(200'000, 2'000'000);
  const uint64_t retain = 64 * 1024;
  auto expected = numbered_lines(1, lines);
  auto started = cli("--json run --detach --retain " + std::to_string(retain)
                     + " -- seq 1 " + std::to_string(lines));
  CAF_REQUIRE_EQUAL(started.status, 0);
  auto id = json_lines(started.out).at(0)["id"].get<std::string>();
  // Once it has ended: everything before the window is one gap.
  auto all = cli("--json attach " + id + " --from-start");
  CAF_REQUIRE_EQUAL(all.status, 0);
  std::mt19937_64 rng{7};
  std::vector<uint64_t> starts{0};
  for (int i = 0; i < 20; ++i)
    starts.push_back(
      std::uniform_int_distribution<uint64_t>{0, expected.size()}(rng));
  for (auto from : starts) {
    auto r = cli("--json attach " + id + " --no-follow --from "
                 + std::to_string(from));
    CAF_REQUIRE_EQUAL(r.status, 0);
    uint64_t gap = 0;
    uint64_t at = from;
    std::string data;
    for (auto& line : json_lines(r.out)) {
      if (line["type"] == "gap") {
        gap += line["bytes"].get<uint64_t>();
        at += line["bytes"].get<uint64_t>();
      } else if (line["type"] == "chunk") {
        CAF_REQUIRE_EQUAL(line["offset"].get<uint64_t>(), at + data.size());
        data += line.contains("data") ? line["data"].get<std::string>()
                                      : sandbox::test::unbase64(
                                        line["data_b64"].get<std::string>());
      }
    }
    // The log keeps the newest `retain` bytes at most: what lies before
    // them is the gap, exactly.
    auto kept_from = expected.size()
                     - std::min<uint64_t>(expected.size(), retain);
    CAF_CHECK_EQUAL(gap, from < kept_from ? kept_from - from : 0);
    CAF_CHECK(data == expected.substr(at));
  }
}

CAF_TEST_FIXTURE_SCOPE_END()
