#define CAF_SUITE libsandbox.process_tree
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <unistd.h>

#include <string>
#include <vector>

#include "sandbox/process/proc_stats.hpp"
#include "sandbox/process/process_tree.hpp"

using sandbox::executions_query;
using sandbox::find_members;
using sandbox::proc_entry;

namespace {

proc_entry entry(pid_t pid, pid_t ppid, pid_t pgid, char state = 'S') {
  proc_entry e;
  e.pid = pid;
  e.ppid = ppid;
  e.pgid = pgid;
  e.state = state;
  return e;
}

} // namespace

CAF_TEST(an executions query covers the children their groups and a marker) {
  auto q = executions_query({30, 10}, {20, 10}, "SANDBOX_EXEC=s/");
  CAF_CHECK_EQUAL(q.groups, (std::vector<pid_t>{10, 20, 30}));
  CAF_CHECK_EQUAL(q.roots, (std::vector<pid_t>{30, 10}));
  CAF_CHECK_EQUAL(q.marker_prefix, "SANDBOX_EXEC=s/");
}

CAF_TEST(members are group members and descendants but not zombies) {
  std::vector<proc_entry> snapshot{
    entry(1, 0, 1),         // init
    entry(10, 1, 10),       // a child, leader of group 10
    entry(11, 10, 10),      // in group 10
    entry(12, 11, 12),      // left the group, still a descendant
    entry(13, 10, 10, 'Z'), // a zombie: ended already
    entry(20, 1, 20),       // an exited child's group lives on
    entry(21, 1, 20),       entry(30, 1, 30), // someone else's
  };
  auto q = executions_query({10}, {20}, "");
  CAF_CHECK_EQUAL(find_members(q, snapshot),
                  (std::vector<pid_t>{10, 11, 12, 20, 21}));
}

CAF_TEST(reading proc leaves no descriptor open) {
  // The subreaper and the stop sweep read /proc on reactor threads; the
  // actor suites' descriptor counts leave those reads out, so they must
  // never leak.
  auto before = sandbox::open_fd_count();
  for (int i = 0; i < 10; ++i) {
    CAF_CHECK(!sandbox::proc_snapshot().empty());
    auto q = executions_query({::getpid()}, {}, "SANDBOX_NO_SUCH_MARKER=");
    (void) find_members(q);
    (void) sandbox::environ_has_prefix(::getpid(), "PATH=");
  }
  CAF_CHECK_EQUAL(sandbox::open_fd_count(), before);
}

CAF_TEST(a stat line parses from its last parenthesis) {
  // comm may hold spaces and parentheses: ") (" must not fool the parser.
  std::string line = "4242 (a) (b c) S 17 4242 4242 0 -1 4194560 100 0 0 0 "
                     "1 2 0 0 20 0 1 0 987654 1000 100";
  sandbox::proc_stat st;
  CAF_REQUIRE(sandbox::parse_proc_stat(line, st));
  CAF_CHECK_EQUAL(st.state, 'S');
  CAF_CHECK_EQUAL(st.ppid, 17);
  CAF_CHECK_EQUAL(st.pgid, 4242);
  CAF_CHECK_EQUAL(st.start_time, 987654u);
  CAF_CHECK(!sandbox::parse_proc_stat("no parenthesis here", st));
  // A line cut before the start time (field 22) is refused, not read as 0.
  CAF_CHECK(!sandbox::parse_proc_stat("4242 (a) S 17 4242 4242 0 -1", st));
  // Our own line: the parent and the start time /proc/self/stat gives.
  std::string self;
  CAF_REQUIRE(sandbox::read_small_file("/proc/self/stat", self));
  CAF_REQUIRE(sandbox::parse_proc_stat(self, st));
  CAF_CHECK_EQUAL(st.ppid, ::getppid());
  CAF_CHECK_EQUAL(st.pgid, ::getpgrp());
  CAF_CHECK(st.start_time > 0u);
}
