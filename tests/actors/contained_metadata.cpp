#define CAF_SUITE actors.contained_metadata
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// What a contained command may change of a file's metadata, and which unix
// sockets it reaches (docs/security.md, "Metadata" and "Unix sockets";
// reliability A2, A3, A9): set-uid and set-gid modes and file capabilities
// are refused wherever the file is, a host file's mode and times outside
// the writable places are refused, a host unix socket is refused; each
// refusal reported. `chmod +x` in the working directory still works.

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "contained_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/violations.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::isolation_mode;
using sandbox::violation_kind;
using sandbox::actors::blocking_session;
using sandbox::actors::session_config;
using sandbox::test::host_can_contain;
using sandbox::test::reported;

namespace {

mode_t mode_of(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

struct fixture : sandbox::test::contained_fixture {
  std::string outside = out.path;
  std::optional<blocking_session> s;

  fixture() {
    start();
    if (!node)
      return;
    // The host file and socket the attacks aim at are in the view
    // (read-only): the refusal is the watch's, not their absence.
    readable = {outside};
    s.emplace(make_session());
  }

  ~fixture() {
    if (s)
      (void) s->stop();
  }

  sandbox::exec_result run(const std::string& cmd) {
    auto r = s->execute(cmd, {});
    if (!r)
      throw std::runtime_error(r.error().message);
    CAF_MESSAGE("stdout: " << r->stdout_data << "stderr: " << r->stderr_data);
    return std::move(*r);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(contained_metadata_tests, fixture)

CAF_TEST(set - uid and set - gid modes in the working directory are refused) {
  if (!host_can_contain())
    return;
  auto r = run("cp /bin/true ./py && chmod 4755 ./py; echo $?;"
               " mkdir dir && chmod g+s dir; echo $?;"
               " chmod 755 ./py; echo $?; chmod +x ./py; echo $?");
  CAF_CHECK_EQUAL(r.stdout_data, "1\n1\n0\n0\n");
  CAF_CHECK_EQUAL(mode_of(work + "/py"), 0755u);
  CAF_CHECK_EQUAL(mode_of(work + "/dir") & 07000, 0u);
  CAF_CHECK(reported(r.violations, violation_kind::syscall_denied,
                     "fchmodat 4755 " + work + "/py"));
  CAF_CHECK(reported(r.violations, violation_kind::syscall_denied,
                     "fchmodat 2755 " + work + "/dir"));
  CAF_CHECK_EQUAL(r.violations.size(), 2u);
}

CAF_TEST(a file capability is refused and reported) {
  if (!host_can_contain())
    return;
  auto r = run("cp /bin/true ./capbin && python3 -c \"import os, struct\n"
               "try:\n"
               "    os.setxattr('capbin', 'security.capability',"
               " struct.pack('<IIIII', 0x02000001, 1 << 21, 0, 0, 0))\n"
               "    print('set')\n"
               "except PermissionError:\n"
               "    print('refused')\"");
  CAF_CHECK_EQUAL(r.stdout_data, "refused\n");
  CAF_CHECK(reported(r.violations, violation_kind::syscall_denied,
                     "setxattr security.capability " + work + "/capbin"));
}

CAF_TEST(the mode and times of a host file are refused and reported) {
  if (!host_can_contain())
    return;
  auto file = outside + "/file";
  std::ofstream{file} << "s";
  ::chmod(file.c_str(), 0600);
  auto r = run("chmod 0666 " + file + "; echo $?; touch -m -d 2001-01-01 "
               + file + "; echo $?");
  CAF_CHECK_EQUAL(r.stdout_data, "1\n1\n");
  CAF_CHECK_EQUAL(mode_of(file), 0600u);
  CAF_CHECK(
    reported(r.violations, violation_kind::write_denied, "fchmodat " + file));
  CAF_CHECK(
    reported(r.violations, violation_kind::write_denied, "utimensat " + file));
}

CAF_TEST(a host unix socket is refused and reported) {
  if (!host_can_contain())
    return;
  auto path = outside + "/host.sock";
  int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.data(), path.size());
  CAF_REQUIRE_EQUAL(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  CAF_REQUIRE_EQUAL(::listen(l, 4), 0);
  auto r = run("python3 -c \"import socket\n"
               "s = socket.socket(socket.AF_UNIX)\n"
               "try:\n"
               "    s.connect('"
               + path
               + "')\n"
                 "    print('connected')\n"
                 "except PermissionError:\n"
                 "    print('refused')\"");
  ::close(l);
  CAF_CHECK_EQUAL(r.stdout_data, "refused\n");
  CAF_CHECK(reported(r.violations, violation_kind::connect_denied,
                     "connect unix:" + path));
}

CAF_TEST_FIXTURE_SCOPE_END()
