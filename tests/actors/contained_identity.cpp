#define CAF_SUITE actors.contained_identity
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

// Who a contained command is (docs/security.md, "Identity"): on a node that
// may map ids (root), the session's root is a host uid and gid of its own,
// so the node's files belong to a uid the session does not have (A2, A3,
// A9 of reliability-2.md), while its writable directories are id-mapped:
// what it makes there is the node's on the host.

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "contained_fixture.hpp"
#include "helpers/can_contain.hpp"
#include "helpers/foreign_abi.hpp"
#include "helpers/host_listener.hpp"
#include "helpers/violations.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/contain/isolation.hpp"

using sandbox::isolation_mode;
using sandbox::actors::blocking_session;
using sandbox::actors::session_config;
using sandbox::test::has_detail_part;
using sandbox::test::host_can_contain;

namespace {

/// The given ids of a contained session's root on this host; false (with a
/// message) where the node maps its own uid instead.
bool host_gives_own_ids() {
  if (!host_can_contain())
    return false;
  auto& host = sandbox::host_isolation();
  if (!host.own_ids)
    CAF_MESSAGE(
      "skipped: sessions are the node's uid here: " << host.own_ids_detail);
  return host.own_ids;
}

/// The `Uid:`, `Gid:` or `Groups:` line of /proc/`pid`/status, after the
/// colon and its tab.
std::string status_line(int pid, const std::string& key) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) {
      auto value = line.substr(key.size() + 1);
      return value.substr(
        std::min(value.find_first_not_of(" \t"), value.size()));
    }
  return {};
}

/// The first id of a `Uid:`/`Gid:` line.
long first_id(const std::string& line) {
  std::istringstream in{line};
  long id = -1;
  in >> id;
  return id;
}

struct fixture : sandbox::test::contained_fixture {
  uint32_t base = sandbox::default_session_id_base;
  uint32_t count = sandbox::default_session_id_count;

  fixture() {
    auto cfg = sandbox::test::contained_config();
    cfg.isolation_uid_count = sandbox::default_session_id_count;
    base = cfg.isolation_uid_base;
    count = cfg.isolation_uid_count;
    start(cfg);
    work = dir.path + "/wd";
  }

  /// The host uid of a process of `s` (a spawned one, which ends after).
  long host_uid_of(blocking_session& s, std::string* gid = nullptr,
                   std::string* groups = nullptr) {
    auto p = s.spawn("exec cat");
    if (!p)
      throw std::runtime_error(p.error().message);
    auto uid = status_line(p->pid(), "Uid");
    if (gid != nullptr)
      *gid = status_line(p->pid(), "Gid");
    if (groups != nullptr)
      *groups = status_line(p->pid(), "Groups");
    (void) p->close_stdin();
    (void) p->wait();
    CHECK_THAT(!uid.empty(), "no status of " << p->pid());
    return first_id(uid);
  }

  bool in_range(long id) const {
    return id >= static_cast<long>(base)
           && id < static_cast<long>(base) + static_cast<long>(count);
  }
};

/// What a Python call raised: "ok" or the errno's name.
const char* attempt_py = "import errno,os,sys\n"
                         "def attempt(name, f):\n"
                         "  try:\n"
                         "    f(); print(name, 'ok')\n"
                         "  except OSError as e:\n"
                         "    print(name, errno.errorcode[e.errno])\n";

} // namespace

CAF_TEST_FIXTURE_SCOPE(contained_identity_tests, fixture)

CAF_TEST(the session root is a host uid and gid of its own from the range) {
  if (!host_gives_own_ids())
    return;
  auto s = make_session();
  auto r = run(s, "id -u; id -g; id -G");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data, "0\n0\n0\n");
  std::string gid;
  std::string groups;
  auto uid = host_uid_of(s, &gid, &groups);
  CHECK_THAT(in_range(uid), "host uid " << uid << " is not from the range");
  CAF_CHECK_NOT_EQUAL(uid, static_cast<long>(::geteuid()));
  // Real, effective, saved and file system ids alike; no groups of the
  // node's.
  std::ostringstream four;
  four << uid << "\t" << uid << "\t" << uid << "\t" << uid;
  CAF_CHECK_EQUAL(gid, four.str());
  CAF_CHECK_EQUAL(groups, "");
  // A second session has another one.
  auto t = make_session();
  auto other = host_uid_of(t);
  CHECK_THAT(in_range(other), "host uid " << other << " is not from the range");
  CAF_CHECK_NOT_EQUAL(other, uid);
  (void) t.stop();
  (void) s.stop();
}

CAF_TEST(a file made in the working directory belongs to the node on the host) {
  if (!host_gives_own_ids())
    return;
  auto s = make_session();
  std::ofstream{dir.at("wd/from-host")} << "node";
  auto r = run(s, "echo made > made && stat -c %u:%g made from-host"
                  " && echo more >> from-host");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data, "0:0\n0:0\n");
  struct stat st;
  CAF_REQUIRE_EQUAL(::stat(dir.at("wd/made").c_str(), &st), 0);
  CAF_CHECK_EQUAL(st.st_uid, ::geteuid());
  CAF_CHECK_EQUAL(st.st_gid, ::getegid());
  CAF_REQUIRE_EQUAL(::stat(dir.at("wd/from-host").c_str(), &st), 0);
  CAF_CHECK_EQUAL(st.st_uid, ::geteuid());
  // The home too.
  auto h = run(s, "echo x > $HOME/h && stat -c %u $HOME/h");
  CAF_CHECK_EQUAL(h.stdout_data, "0\n");
  CAF_REQUIRE_EQUAL(::stat(dir.at("home/h").c_str(), &st), 0);
  CAF_CHECK_EQUAL(st.st_uid, ::geteuid());
  (void) s.stop();
}

CAF_TEST(host files of another owner cannot be changed in a writable place) {
  if (!host_gives_own_ids())
    return;
  // A host file in an allow_write directory that the node's user does not
  // own: the session is neither its owner nor privileged over it.
  ::mkdir((out.path + "/rw").c_str(), 0755);
  auto victim = out.path + "/rw/victim";
  std::ofstream{victim} << "V";
  CAF_REQUIRE_EQUAL(::chown(victim.c_str(), 4242, 4242), 0);
  CAF_REQUIRE_EQUAL(::chmod(victim.c_str(), 0644), 0);
  struct stat before;
  CAF_REQUIRE_EQUAL(::stat(victim.c_str(), &before), 0);
  session_config cfg;
  cfg.allow_write = {out.path + "/rw"};
  auto s = make_session(cfg);
  auto r = run(s, std::string{"python3 -c \""} + attempt_py
                    + "p=sys.argv[1]\n"
                      "attempt('chmod', lambda: os.chmod(p, 0o666))\n"
                      "attempt('utime', lambda: os.utime(p, (1, 1)))\n"
                      "attempt('chown', lambda: os.chown(p, 0, 0))\n"
                      "attempt('capability', lambda: os.setxattr(p, "
                      "'security.capability', b'\\x01\\x00\\x00\\x02' + "
                      "bytes(16)))\n"
                      "attempt('trusted', lambda: os.setxattr(p, "
                      "'trusted.x', b'1'))\n"
                      "attempt('write', lambda: open(p, 'a'))\n"
                      "\" "
                    + victim);
  // The mount maps no owner 4242: the kernel refuses a change of its
  // attributes with EOVERFLOW.
  CAF_CHECK_EQUAL(r.stdout_data, "chmod EOVERFLOW\n"
                                 "utime EOVERFLOW\n"
                                 "chown EPERM\n"
                                 "capability EPERM\n"
                                 "trusted EPERM\n"
                                 "write EACCES\n");
  struct stat after;
  CAF_REQUIRE_EQUAL(::stat(victim.c_str(), &after), 0);
  CAF_CHECK_EQUAL(after.st_mode, before.st_mode);
  CAF_CHECK_EQUAL(after.st_uid, 4242u);
  CAF_CHECK_EQUAL(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  CAF_CHECK_EQUAL(after.st_size, 1);
  char names[256];
  CAF_CHECK_EQUAL(::listxattr(victim.c_str(), names, sizeof(names)), 0);
  (void) s.stop();
}

CAF_TEST(a read only host path stays read only and is not the session s) {
  if (!host_gives_own_ids())
    return;
  ::mkdir((out.path + "/ro").c_str(), 0755);
  auto file = out.path + "/ro/file";
  std::ofstream{file} << "R";
  CAF_REQUIRE_EQUAL(::chmod(file.c_str(), 0644), 0);
  struct stat before;
  CAF_REQUIRE_EQUAL(::stat(file.c_str(), &before), 0);
  session_config cfg;
  cfg.allow_read = {out.path + "/ro"};
  auto s = make_session(cfg);
  // mount_setattr would make the bind writable (Landlock does not cover
  // it): refused. The chmod is refused by the watch before the kernel's
  // EROFS. The node's file is not the session's: its owner reads as the
  // overflow uid.
  auto r = run(s, std::string{"python3 -c \""} + attempt_py
                    + "import ctypes\n"
                      "libc = ctypes.CDLL(None, use_errno=True)\n"
                      "attr = ctypes.create_string_buffer(bytes(8) + "
                      "(1).to_bytes(8, 'little') + bytes(16))\n"
                      "def remount():\n"
                      "  if libc.syscall(442, -100, sys.argv[1].encode(), "
                      "0x8000, attr, 32) != 0:\n"
                      "    raise OSError(ctypes.get_errno(), 'mount_setattr')\n"
                      "attempt('mount_setattr', remount)\n"
                      "attempt('chmod', lambda: os.chmod(sys.argv[2], "
                      "0o666))\n"
                      "print(os.stat(sys.argv[2]).st_uid)\n"
                      "\" "
                    + out.path + "/ro " + file);
  CAF_CHECK_EQUAL(r.stdout_data, "mount_setattr EPERM\n"
                                 "chmod EPERM\n"
                                 "65534\n");
  CAF_CHECK(has_detail_part(
    r.violations, sandbox::violation_kind::syscall_denied, "mount_setattr"));
  CAF_CHECK(
    has_detail_part(r.violations, sandbox::violation_kind::write_denied, file));
  struct stat after;
  CAF_REQUIRE_EQUAL(::stat(file.c_str(), &after), 0);
  CAF_CHECK_EQUAL(after.st_mode, before.st_mode);
  (void) s.stop();
}

CAF_TEST(
  set uid bits and file capabilities are refused in the working directory) {
  if (!host_gives_own_ids())
    return;
  auto s = make_session();
  auto r = run(s,
               std::string{"cp \"$(command -v python3)\" py && python3 -c \""}
                 + attempt_py
                 + "attempt('chmod u+s', lambda: os.chmod('py', 0o4755))\n"
                   "attempt('chmod g+s', lambda: os.chmod('py', 0o2755))\n"
                   "attempt('capability', lambda: os.setxattr('py', "
                   "'security.capability', b'\\x01\\x00\\x00\\x02' + "
                   "(1 << 21).to_bytes(4, 'little') + bytes(12)))\n"
                   "attempt('open 6755', lambda: os.open('made', "
                   "os.O_CREAT | os.O_WRONLY, 0o6755))\n"
                   "\"");
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data, "chmod u+s EPERM\n"
                                 "chmod g+s EPERM\n"
                                 "capability EPERM\n"
                                 "open 6755 EPERM\n");
  // Each refusal is reported.
  for (auto* what :
       {"chmod 4755", "chmod 2755", "security.capability", "open 6755"})
    CHECK_THAT(has_detail_part(r.violations,
                               sandbox::violation_kind::syscall_denied, what),
               "no syscall_denied naming " << what);
  CAF_CHECK_NOT_EQUAL(::access(dir.at("wd/made").c_str(), F_OK), 0);
  // On the host: the node's file, without a privilege for whoever runs
  // it.
  for (auto* name : {"wd/py"}) {
    struct stat st;
    CAF_REQUIRE_EQUAL(::stat(dir.at(name).c_str(), &st), 0);
    CAF_CHECK_EQUAL(st.st_uid, ::geteuid());
    CHECK_THAT((st.st_mode & (S_ISUID | S_ISGID)) == 0,
               name << " has mode " << std::oct << st.st_mode);
    char value[64];
    CAF_CHECK_EQUAL(::getxattr(dir.at(name).c_str(), "security.capability",
                               value, sizeof(value)),
                    -1);
  }
  (void) s.stop();
}

CAF_TEST(a file only the node may read is unreadable by dac) {
  if (!host_gives_own_ids())
    return;
  // As /etc/shadow is (0640 root:shadow), were it not hidden.
  ::mkdir((out.path + "/ro").c_str(), 0755);
  auto secret = out.path + "/ro/secret";
  std::ofstream{secret} << "SECRET";
  CAF_REQUIRE_EQUAL(::chmod(secret.c_str(), 0640), 0);
  session_config cfg;
  cfg.allow_read = {out.path + "/ro"};
  auto s = make_session(cfg);
  auto r = run(s, "cat " + secret);
  CAF_CHECK_NOT_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.stdout_data, "");
  CAF_CHECK(r.stderr_data.find("Permission denied") != std::string::npos);
  (void) s.stop();
}

CAF_TEST(a host unix socket sees the session uid and outside ones are refused) {
  if (!host_gives_own_ids())
    return;
  auto listen_at = [](const std::string& path, mode_t mode) {
    int fd = sandbox::test::host_unix_socket(path, SOCK_STREAM, mode);
    CAF_REQUIRE(fd >= 0);
    return fd;
  };
  // Outside the writable places, even open to all: refused and reported.
  ::mkdir((out.path + "/ro").c_str(), 0755);
  auto outside = out.path + "/ro/host.sock";
  int outside_fd = listen_at(outside, 0666);
  // In the working directory (where the node's files are the session's):
  // the service sees the session's uid, not the node's.
  auto inside = dir.at("wd/svc.sock");
  session_config cfg;
  cfg.allow_read = {out.path + "/ro"};
  auto s = make_session(cfg);
  int inside_fd = listen_at(inside, 0600);
  auto connect = std::string{
    "python3 -c 'import socket,sys; "
    "socket.socket(socket.AF_UNIX).connect(sys.argv[1])"
    "' "};
  auto refused = run(s, connect + outside);
  CAF_CHECK_NOT_EQUAL(refused.exit_code, 0);
  CAF_CHECK(refused.stderr_data.find("PermissionError") != std::string::npos);
  CAF_CHECK(has_detail_part(refused.violations,
                            sandbox::violation_kind::connect_denied, outside));
  auto ok = run(s, connect + "svc.sock");
  CAF_CHECK_EQUAL(ok.exit_code, 0);
  CAF_CHECK(ok.violations.empty());
  int conn = ::accept4(inside_fd, nullptr, nullptr,
                       SOCK_CLOEXEC | SOCK_NONBLOCK);
  CAF_REQUIRE(conn >= 0);
  ucred peer{};
  socklen_t len = sizeof(peer);
  CAF_REQUIRE_EQUAL(::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len),
                    0);
  CHECK_THAT(in_range(static_cast<long>(peer.uid)),
             "peer uid " << peer.uid << " is not from the range");
  CAF_CHECK_NOT_EQUAL(peer.uid, ::geteuid());
  ::close(conn);
  ::close(inside_fd);
  ::close(outside_fd);
  (void) s.stop();
}

CAF_TEST(an i386 sendto to a host unix socket outside is refused and reported) {
  if (!host_can_contain())
    return;
  if (!sandbox::test::kernel_runs_i386()) {
    CAF_MESSAGE("skipped: this kernel does not run i386 system calls");
    return;
  }
  // A datagram socket open to all, outside the writable places, reached
  // through socketcall(SYS_SENDTO), whose address lies in the caller's
  // memory.
  ::mkdir((out.path + "/ro").c_str(), 0755);
  auto outside = out.path + "/ro/dgram.sock";
  int fd = sandbox::test::host_unix_socket(outside, SOCK_DGRAM, 0666);
  CAF_REQUIRE(fd >= 0);
  session_config cfg;
  cfg.allow_read = {out.path + "/ro"};
  auto s = make_session(cfg);
  auto r = run(s, std::string{sandbox::test::test_child()} + " sendto-i386 "
                    + outside);
  CAF_CHECK_EQUAL(r.stdout_data, "EPERM\n");
  CAF_CHECK(has_detail_part(r.violations,
                            sandbox::violation_kind::connect_denied,
                            "sendto unix:" + outside));
  char buf[8];
  CAF_CHECK_LESS(::recv(fd, buf, sizeof(buf), 0), 0); // nothing came
  ::close(fd);
  (void) s.stop();
}

CAF_TEST_FIXTURE_SCOPE_END()
