#define CAF_SUITE actors.containment
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <random>

#include "fixture.hpp"
#include "runtime.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/client/embedded_node.hpp"

using sandbox::containment_mode;
using sandbox::exec_options;
using sandbox::exit_reason;
using sandbox::actors::containment_choice;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

/// A `sleep` argument unique to one test (`300.<digits>` seconds), so that
/// its escaper can be found by its command line whatever its environment.
std::string unique_sleep() {
  std::random_device rd;
  return "300." + std::to_string(rd() % 900000 + 100000);
}

/// Live (non-zombie) processes whose command line contains `token`.
std::vector<pid_t> processes_running(const std::string& token) {
  std::vector<pid_t> found;
  for (auto& e : sandbox::proc_snapshot()) {
    if (e.zombie() || e.pid == ::getpid())
      continue;
    // Not a stream: libstdc++ throws when the read fails (ESRCH: the
    // process ended since the snapshot).
    std::string cmdline;
    if (sandbox::read_small_file("/proc/" + std::to_string(e.pid) + "/cmdline",
                                 cmdline)
        && cmdline.find(token) != std::string::npos)
      found.push_back(e.pid);
  }
  return found;
}

/// The escaper of the reviews: leaves the process group (setsid), clears
/// the environment (and with it the marker), and loses its parent.
std::string escaper(const std::string& sleep) {
  return "(setsid env -i sleep " + sleep + " &)";
}

/// A node in the mode `choice`, with the fixture's settings.
struct mode_fixture {
  sandbox::test::temp_dir dir;
  std::unique_ptr<sandbox::actors::embedded_node> node;

  explicit mode_fixture(containment_choice choice) {
    auto cfg = sandbox::test::node_fixture::config();
    cfg.containment = choice;
    // The memory and process limits of contained sessions need the cgroup
    // mode: forced into the process-group mode, the node gives its
    // (contained) sessions none, else it refuses to make them
    // (docs/security.md, "Limits").
    if (choice == containment_choice::process_group) {
      cfg.limits.memory = 0;
      cfg.limits.processes = 0;
    }
    node = std::make_unique<sandbox::actors::embedded_node>(cfg);
  }

  sandbox::actors::blocking_session make_session() {
    sandbox::actors::session_config cfg;
    cfg.working_directory = dir.path + "/work";
    cfg.home_directory = dir.path + "/home";
    auto s = sandbox::actors::blocking_session::create(*node, cfg);
    if (!s)
      throw std::runtime_error(s.error().message);
    return std::move(*s);
  }
};

/// The cgroup mode where this host can give it (a CI container may not:
/// the tests then say so and check nothing).
struct cgroup_fixture {
  std::unique_ptr<mode_fixture> m;
  /// Descriptors once the node is up and has run one session (its lazily
  /// made parts exist then): what every test must come back to.
  sandbox::test::fd_census fds_before;

  cgroup_fixture() {
    auto probe = sandbox::cgroup_tree::create();
    if (!probe) {
      CAF_MESSAGE(
        "cgroup mode unavailable, skipped: " << probe.error().message);
      return;
    }
    probe->reset();
    m = std::make_unique<mode_fixture>(containment_choice::cgroup);
    auto warm = m->make_session();
    if (!warm.execute("true") || !warm.stop())
      throw std::runtime_error("warm-up session failed");
    fds_before = sandbox::test::plumbing_fds();
  }

  const std::string& root() const {
    return m->node->rt()->cgroup_root();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(cgroup_mode_tests, cgroup_fixture)

CAF_TEST(the node and its sessions report the cgroup mode) {
  if (!m)
    return;
  CAF_CHECK(m->node->rt()->containment() == containment_mode::cgroup);
  // Made at an execution's launch only, gone with the last session.
  CAF_CHECK(!root().empty());
  CAF_CHECK(!exists(root()));
  auto s = m->make_session();
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(info->containment == containment_mode::cgroup);
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK(receipt->mode == containment_mode::cgroup);
}

CAF_TEST(an escaper is gone after a timeout in the cgroup mode) {
  if (!m)
    return;
  auto s = m->make_session();
  auto sleep = unique_sleep();
  exec_options opts;
  opts.timeout = std::chrono::milliseconds{300};
  auto r = s.execute(escaper(sleep) + "; echo started; exec sleep 30", opts);
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(r->reason == exit_reason::timeout);
  // The result comes after the sweep confirmed the cgroup empty.
  CAF_CHECK_EQUAL(processes_running(sleep).size(), 0u);
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  auto id = info->id;
  auto session_cgroup = m->node->rt()->session_cgroup(id);
  SANDBOX_REQUIRE_OK(s.stop());
  CAF_CHECK(!exists(session_cgroup));
  CAF_CHECK_EQUAL(sandbox::test::leaked_fds(fds_before), "");
}

CAF_TEST(an escaper is gone after a cancel in the cgroup mode) {
  if (!m)
    return;
  auto s = m->make_session();
  auto other = sandbox::actors::blocking_session{m->node->system(), s.handle()};
  auto sleep = unique_sleep();
  exec_options opts;
  opts.cancel_key = "escaper";
  bool cancelled = false;
  auto r = s.execute_streaming(escaper(sleep) + "; echo started; sleep 30",
                               opts, [&](const sandbox::output_chunk& c) {
                                 if (!cancelled && c.data == "started\n") {
                                   auto done = other.cancel("escaper");
                                   SANDBOX_CHECK_OK(done);
                                   cancelled = done && *done;
                                 }
                               });
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK(cancelled);
  CAF_CHECK(r->reason == exit_reason::cancelled);
  CAF_CHECK_EQUAL(processes_running(sleep).size(), 0u);
  SANDBOX_REQUIRE_OK(s.stop());
  CAF_CHECK_EQUAL(sandbox::test::leaked_fds(fds_before), "");
}

CAF_TEST(an escaper is gone after stop and no cgroup is left) {
  if (!m)
    return;
  std::string node_root = root();
  {
    auto s = m->make_session();
    auto sleep = unique_sleep();
    auto r = s.execute(escaper(sleep));
    SANDBOX_REQUIRE_OK(r);
    CAF_CHECK_EQUAL(r->exit_code, 0);
    CAF_REQUIRE_EQUAL(processes_running(sleep).size(), 1u);
    auto info = s.info();
    SANDBOX_REQUIRE_OK(info);
    auto id = info->id;
    auto session_cgroup = m->node->rt()->session_cgroup(id);
    CAF_CHECK(exists(session_cgroup));
    auto receipt = s.stop();
    SANDBOX_REQUIRE_OK(receipt);
    CAF_CHECK(receipt->mode == containment_mode::cgroup);
    CAF_CHECK_EQUAL(receipt->ended, 1u);
    CAF_CHECK_EQUAL(receipt->survivors, 0u);
    CAF_CHECK_EQUAL(processes_running(sleep).size(), 0u);
    CAF_CHECK(!exists(session_cgroup));
    // The node's directories went with its last session.
    CAF_CHECK(!exists(node_root));
    CAF_CHECK_EQUAL(sandbox::test::leaked_fds(fds_before), "");
  }
  // A node that goes with a running execution ends it and leaves nothing.
  auto sleep = unique_sleep();
  {
    auto s = m->make_session();
    SANDBOX_REQUIRE_OK(s.spawn(escaper(sleep) + "; exec sleep 30"));
    CAF_CHECK(exists(node_root));
  }
  m.reset();
  CAF_CHECK(!exists(node_root));
  CAF_CHECK_EQUAL(processes_running(sleep).size(), 0u);
}

CAF_TEST(executions one after another share one cgroup) {
  if (!m)
    return;
  auto s = m->make_session();
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  auto session_cgroup = m->node->rt()->session_cgroup(info->id);
  // The sorted names of the session's cgroups.
  auto cgroups = [&] {
    std::vector<std::string> names;
    if (auto* d = ::opendir(session_cgroup.c_str())) {
      while (auto* e = ::readdir(d))
        if (e->d_type == DT_DIR && e->d_name[0] != '.')
          names.emplace_back(e->d_name);
      ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    std::string out;
    for (auto& n : names)
      out += (out.empty() ? "" : " ") + n;
    return out;
  };
  // Each execution's cgroup is empty once its process is gone, and the
  // next execution is born in it: one directory, whatever the count. A
  // contained session's init holds one of its own (`init`) until the stop.
  auto init = sandbox::test::contained_run() ? std::string{" init"}
                                             : std::string{};
  SANDBOX_REQUIRE_OK(s.execute("true"));
  auto first = cgroups();
  CAF_CHECK_EQUAL(first.rfind("e-", 0), 0u);
  CAF_CHECK_EQUAL(first.find(' '),
                  init.empty() ? std::string::npos : first.find(init));
  auto name = first.substr(0, first.find(' '));
  for (int i = 0; i < 3; ++i) {
    auto r = s.execute("cat /proc/self/cgroup");
    SANDBOX_REQUIRE_OK(r);
    CAF_CHECK_NOT_EQUAL(r->stdout_data.find("/" + name + "\n"),
                        std::string::npos);
  }
  CAF_CHECK_EQUAL(cgroups(), first);
  // A cgroup that a background process still holds is not used again.
  auto sleep = unique_sleep();
  SANDBOX_REQUIRE_OK(s.execute("sleep " + sleep + " >/dev/null 2>&1 &"));
  auto r = s.execute("cat /proc/self/cgroup");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data.find("/" + name + "\n"), std::string::npos);
  auto now = cgroups();
  CAF_CHECK_NOT_EQUAL(now, first);
  CAF_CHECK_EQUAL(std::count(now.begin(), now.end(), ' '),
                  init.empty() ? 1 : 2);
  SANDBOX_REQUIRE_OK(s.stop());
  CAF_CHECK(!exists(session_cgroup));
  CAF_CHECK_EQUAL(processes_running(sleep).size(), 0u);
}

CAF_TEST(the cgroup of an execution ended by a timeout is not used again) {
  if (!m)
    return;
  auto s = m->make_session();
  auto where = [&](const exec_options& opts = {}) {
    auto r = s.execute("cat /proc/self/cgroup; sleep 0.2; sleep 30", opts);
    if (!r)
      return std::string{};
    auto& out = r->stdout_data;
    auto slash = out.rfind('/');
    return slash == std::string::npos
             ? std::string{}
             : out.substr(slash + 1, out.find('\n', slash) - slash - 1);
  };
  exec_options opts;
  opts.timeout = std::chrono::milliseconds{100};
  auto first = where(opts);
  CAF_CHECK_EQUAL(first.rfind("e-", 0), 0u);
  // The timeout's stop killed and removed it: the next execution cannot
  // meet (nor be killed by) that stop in it.
  auto r = s.execute("cat /proc/self/cgroup");
  SANDBOX_REQUIRE_OK(r);
  CAF_CHECK_EQUAL(r->stdout_data.find("/" + first + "\n"), std::string::npos);
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(!exists(m->node->rt()->session_cgroup(info->id) + "/" + first));
  SANDBOX_REQUIRE_OK(s.stop());
}

CAF_TEST(a launch that fails leaves no cgroup behind) {
  if (!m)
    return;
  auto s = m->make_session();
  exec_options opts;
  opts.cwd = "missing";
  auto r = s.execute("true", opts);
  CAF_REQUIRE(!r);
  CAF_CHECK(r.error().code == sandbox::errc::path_not_found);
  // The execution's, the session's and the node's directories were made
  // for the launch and went with its failure. A contained session's init
  // (started before the launch) holds the session's until the stop.
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  auto session_cgroup = m->node->rt()->session_cgroup(info->id);
  if (sandbox::test::contained_run()) {
    CAF_CHECK(exists(session_cgroup + "/init"));
    CAF_CHECK(!exists(session_cgroup + "/e-1"));
  } else {
    CAF_CHECK(!exists(root()));
  }
  SANDBOX_REQUIRE_OK(s.stop());
  CAF_CHECK(!exists(root()));
}

CAF_TEST_FIXTURE_SCOPE_END()

namespace {

struct process_group_fixture : mode_fixture {
  process_group_fixture() : mode_fixture(containment_choice::process_group) {
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(process_group_mode_tests, process_group_fixture)

CAF_TEST(a forced fallback reports the process group mode everywhere) {
  CAF_CHECK(node->rt()->containment() == containment_mode::process_group);
  CAF_CHECK(node->rt()->cgroup_root().empty());
  auto s = make_session();
  auto info = s.info();
  SANDBOX_REQUIRE_OK(info);
  CAF_CHECK(info->containment == containment_mode::process_group);
  SANDBOX_REQUIRE_OK(s.execute("sleep 30 & true"));
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK(receipt->mode == containment_mode::process_group);
  CAF_CHECK_EQUAL(receipt->ended, 1u);
  CAF_CHECK_EQUAL(receipt->survivors, 0u);
}

CAF_TEST(the fallback ends what it can see and says which mode counted) {
  auto s = make_session();
  auto sleep = unique_sleep();
  // setsid alone keeps the marker: found and ended.
  SANDBOX_REQUIRE_OK(s.execute("(setsid sleep " + sleep + " &)"));
  // setsid + env -i: invisible to this mode (the documented limit), so
  // the receipt's survivors=0 is qualified by its mode.
  auto hidden = unique_sleep();
  SANDBOX_REQUIRE_OK(s.execute(escaper(hidden)));
  auto receipt = s.stop();
  SANDBOX_REQUIRE_OK(receipt);
  CAF_CHECK(receipt->mode == containment_mode::process_group);
  CAF_CHECK_EQUAL(processes_running(sleep).size(), 0u);
  // Not a requirement of this mode, only a record of the limit; the test
  // ends what it started.
  auto escaped = processes_running(hidden);
  CAF_MESSAGE("escapers the fallback could not see: " << escaped.size());
  for (auto pid : escaped)
    ::kill(pid, SIGKILL);
}

CAF_TEST_FIXTURE_SCOPE_END()
