#define CAF_SUITE cli.info
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include <sys/stat.h>

#include "cli_fixture.hpp"
#include "sandbox/cgroup/cgroup.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::test::json_lines;
using sandbox::test::sandbox_cli;

namespace {

/// The mode this host gives an embedded node (a CI container may give
/// only the fallback).
std::string expected_mode() {
  auto probe = sandbox::cgroup_tree::create();
  return probe ? "cgroup" : "process_group";
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

} // namespace

CAF_TEST(info prints the version and the containment mode) {
  auto r = sandbox_cli("info");
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK(r.out.find("version      " SANDBOX_VERSION "\n")
            != std::string::npos);
  CAF_CHECK(r.out.find("containment  " + expected_mode() + "\n")
            != std::string::npos);
  CAF_CHECK(r.out.find("kernel       Linux ") != std::string::npos);
  // What a contained session gets (embedded), or the isolation of the
  // session asked (remote: a new one, the node's default).
  if (sandbox::test::remote_mode())
    CAF_CHECK(r.out.find("\nisolation    ") != std::string::npos
              && r.out.find(" session's") != std::string::npos);
  else if (sandbox::host_isolation().missing().empty())
    CAF_CHECK(r.out.find("; a private /tmp each; ") != std::string::npos
              && r.out.find(sandbox::host_isolation().own_ids
                              ? "; a host uid of its own each)\n"
                              : "; the node's uid: ")
                   != std::string::npos);
}

CAF_TEST(info-- json is one object with the same facts) {
  auto r = sandbox_cli("info --json");
  CAF_CHECK_EQUAL(r.status, 0);
  auto lines = json_lines(r.out);
  CAF_REQUIRE_EQUAL(lines.size(), 1u);
  auto& j = lines[0];
  CAF_CHECK_EQUAL(j["type"], "info");
  CAF_CHECK_EQUAL(j["version"], SANDBOX_VERSION);
  CAF_CHECK_EQUAL(j["containment"], expected_mode());
  if (sandbox::test::remote_mode())
    return;
  // The embedded node says where its cgroups live, or why it has none.
  if (j["containment"] == "cgroup") {
    CAF_CHECK(j.contains("cgroup"));
    CAF_CHECK(j["launch"] == "clone3" || j["launch"] == "clone");
    // Made at a first execution only: `info` leaves nothing behind.
    CAF_CHECK(!exists(j["cgroup"].get<std::string>()));
  } else {
    CAF_CHECK(j.contains("containment_detail"));
  }
}

CAF_TEST(session stop names the mode its survivor count comes from) {
  sandbox::test::temp_dir dir;
  auto created
    = sandbox_cli("--json session create --workdir '" + dir.path + "'");
  CAF_REQUIRE_EQUAL(created.status, 0);
  if (!sandbox::test::remote_mode())
    return; // embedded, the session ended with that CLI
  auto id = json_lines(created.out).at(0)["id"].get<std::string>();
  auto stopped = sandbox_cli("session stop " + id);
  CAF_CHECK_EQUAL(stopped.status, 0);
  CAF_CHECK(stopped.out.find("0 survivors ("
                             + std::string{expected_mode() == "cgroup"
                                             ? "cgroup"
                                             : "process groups only"}
                             + ")\n")
            != std::string::npos);
}
