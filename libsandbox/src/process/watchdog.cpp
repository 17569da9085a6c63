#include "sandbox/process/watchdog.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <tuple>
#include <vector>

#include <spdlog/spdlog.h>

#include "sandbox/log.hpp"

namespace sandbox {

namespace {

// Record types, the first byte of every message.
constexpr char rec_watch_group = 'G';
constexpr char rec_forget_group = 'g';
constexpr char rec_watch_cgroup = 'C';
constexpr char rec_forget_cgroup = 'c';
constexpr char rec_bye = 'B';

/// Process group ids are below PID_MAX_LIMIT (2^22 on 64-bit Linux).
constexpr size_t group_limit = size_t{1} << 22;
constexpr size_t path_size = 4096;
/// The longest cgroup directory a record may carry: the watchdog appends
/// "/cgroup.kill" and a NUL in a slot of `path_size` bytes.
constexpr size_t max_dir = 4000;
constexpr char kill_file[] = "/cgroup.kill";

/// The watchdog's whole memory, mapped before it starts: it never
/// allocates. Pages are mapped on first touch, so the bitmap costs only
/// the pages that hold watched groups.
struct table {
  uint64_t groups[group_limit / 64];
  /// `<dir>/cgroup.kill`, or empty.
  char cgroups[watchdog::max_cgroups][path_size];
};

// ---------------------------------------------------------------------------
// The watchdog process. Everything below runs in a copy of a multithreaded
// process: system calls made directly (no libc wrapper that a sanitizer
// intercepts, so no lock another thread held at the clone), no allocation,
// no library call, and no sanitizer instrumentation.

#define SANDBOX_RAW                                                            \
  __attribute__((no_sanitize("address", "thread", "undefined")))

SANDBOX_RAW long sys(long n, long a = 0, long b = 0, long c = 0, long d = 0,
                     long e = 0, long f = 0) {
  return ::syscall(n, a, b, c, d, e, f);
}

template <class T>
SANDBOX_RAW long arg(T* p) {
  return reinterpret_cast<long>(p);
}

[[noreturn]] SANDBOX_RAW void die(int status) {
  for (;;)
    sys(SYS_exit_group, status);
}

SANDBOX_RAW void copy(char* to, const char* from, size_t n) {
  for (size_t i = 0; i < n; ++i)
    to[i] = from[i];
}

SANDBOX_RAW bool equal(const char* a, const char* b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return false;
  return true;
}

/// The kernel's `struct sigaction` (rt_sigaction), enough for SIG_DFL and
/// SIG_IGN.
struct kernel_sigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  uint64_t mask;
};

SANDBOX_RAW void set_disposition(int sig, void (*handler)(int)) {
  kernel_sigaction ka{handler, 0, nullptr, 0};
  sys(SYS_rt_sigaction, sig, arg(&ka), 0, sizeof(ka.mask));
}

SANDBOX_RAW void kill_everything(table& t) {
  for (auto& path : t.cgroups) {
    if (path[0] == '\0')
      continue;
    auto fd = sys(SYS_openat, AT_FDCWD, arg(path), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      sys(SYS_write, fd, arg("1"), 1);
      sys(SYS_close, fd);
    }
  }
  for (size_t w = 0; w < group_limit / 64; ++w) {
    auto bits = t.groups[w];
    while (bits != 0) {
      auto b = static_cast<size_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
      sys(SYS_kill, -static_cast<long>(w * 64 + b), SIGKILL);
    }
  }
}

/// Drops the groups that have no member left: their ids may be reused by
/// processes that are not ours.
SANDBOX_RAW void prune_groups(table& t, size_t words) {
  for (size_t w = 0; w < words; ++w) {
    auto bits = t.groups[w];
    while (bits != 0) {
      auto b = static_cast<size_t>(__builtin_ctzll(bits));
      bits &= bits - 1;
      auto pgid = static_cast<long>(w * 64 + b);
      if (sys(SYS_kill, -pgid, 0) != 0 && errno == ESRCH)
        t.groups[w] &= ~(uint64_t{1} << b);
    }
  }
}

SANDBOX_RAW bool same_dir(const char* slot, const char* dir, size_t len) {
  return equal(slot, dir, len)
         && equal(slot + len, kill_file, sizeof(kill_file));
}

SANDBOX_RAW void apply(table& t, const char* rec, size_t n, size_t& words) {
  if ((rec[0] == rec_watch_group || rec[0] == rec_forget_group)
      && n == 1 + sizeof(int32_t)) {
    int32_t pgid;
    copy(reinterpret_cast<char*>(&pgid), rec + 1, sizeof(pgid));
    if (pgid <= 1 || static_cast<size_t>(pgid) >= group_limit)
      return;
    auto w = static_cast<size_t>(pgid) / 64;
    auto bit = uint64_t{1} << (static_cast<size_t>(pgid) % 64);
    if (rec[0] == rec_watch_group) {
      t.groups[w] |= bit;
      if (words < w + 1)
        words = w + 1;
    } else {
      t.groups[w] &= ~bit;
    }
    return;
  }
  if ((rec[0] == rec_watch_cgroup || rec[0] == rec_forget_cgroup) && n > 1
      && n - 1 <= max_dir) {
    auto dir = rec + 1;
    auto len = n - 1;
    char* free_slot = nullptr;
    for (auto& slot : t.cgroups) {
      if (slot[0] == '\0') {
        if (free_slot == nullptr)
          free_slot = slot;
      } else if (same_dir(slot, dir, len)) {
        if (rec[0] == rec_forget_cgroup)
          slot[0] = '\0';
        return;
      }
    }
    if (rec[0] == rec_watch_cgroup && free_slot != nullptr) {
      copy(free_slot, dir, len);
      copy(free_slot + len, kill_file, sizeof(kill_file));
    }
  }
}

SANDBOX_RAW int64_t now_ms() {
  timespec ts{0, 0};
  sys(SYS_clock_gettime, CLOCK_MONOTONIC, arg(&ts));
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

/// Leaves the node's signal dispositions, mask and descriptors behind.
SANDBOX_RAW void detach(int& sock) {
  // The node's handlers would run the node's code in this copy of it.
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      set_disposition(sig, SIG_DFL);
  const int ignored[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE,
                         SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2};
  for (int sig : ignored)
    set_disposition(sig, SIG_IGN);
  uint64_t none = 0;
  sys(SYS_rt_sigprocmask, SIG_SETMASK, arg(&none), 0, sizeof(none));
  if (sock != 3) {
    if (sys(SYS_dup3, sock, 3, 0) < 0)
      die(1);
    sock = 3;
  }
  if (sys(SYS_close_range, 4, ~0u, 0) != 0)
    for (int fd = 4; fd < 4096; ++fd)
      sys(SYS_close, fd);
  auto null = sys(SYS_openat, AT_FDCWD, arg("/dev/null"), O_RDWR);
  if (null >= 0) {
    for (int fd = 0; fd < 3; ++fd)
      if (null != fd)
        sys(SYS_dup3, null, fd, 0);
    if (null > 3)
      sys(SYS_close, null);
  }
  sys(SYS_chdir, arg("/"));
  sys(SYS_prctl, PR_SET_NAME, arg("sandbox-watch"), 0, 0, 0);
}

[[noreturn]] SANDBOX_RAW void watchdog_main(int sock, table& t) {
  detach(sock);
  // Ready: the node learns the pid once nothing of it is held any more.
  int32_t me = static_cast<int32_t>(sys(SYS_getpid));
  sys(SYS_sendto, sock, arg(&me), sizeof(me), MSG_NOSIGNAL, 0, 0);
  static_assert(1 + max_dir < path_size);
  char rec[path_size];
  size_t words = 0; // groups[0, words) may hold a bit
  auto next_prune = now_ms() + 1000;
  for (;;) {
    pollfd p{sock, POLLIN, 0};
    auto wait = next_prune - now_ms();
    if (wait < 0)
      wait = 0;
    timespec ts{static_cast<time_t>(wait / 1000), (wait % 1000) * 1000000};
    auto rc = sys(SYS_ppoll, arg(&p), 1, arg(&ts), 0, 0);
    if (rc < 0 && errno != EINTR)
      die(1);
    if (now_ms() >= next_prune) {
      prune_groups(t, words);
      next_prune = now_ms() + 1000;
    }
    if (rc <= 0)
      continue;
    auto n = sys(SYS_recvfrom, sock, arg(rec), sizeof(rec), MSG_DONTWAIT, 0, 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
        continue;
      if (errno != ECONNRESET)
        die(1); // cannot read: nothing is known any more
      n = 0;
    }
    if (n == 0) {
      // The node's end closed without "bye": the node died.
      kill_everything(t);
      die(0);
    }
    if (rec[0] == rec_bye)
      die(0);
    apply(t, rec, static_cast<size_t>(n), words);
  }
}

SANDBOX_RAW pid_t raw_fork(int exit_signal) {
  // Not fork(): no atfork handlers and no locks in a copy of a
  // multithreaded process.
  return static_cast<pid_t>(sys(SYS_clone, exit_signal, 0, 0, 0, 0));
}

/// The intermediate process: a session of its own, the watchdog forked in
/// it (which sends its pid once it is ready), or -errno sent to the node,
/// then its end.
[[noreturn]] SANDBOX_RAW void middle_main(int sock, table& t) {
  sys(SYS_setsid);
  auto dog = raw_fork(SIGCHLD);
  if (dog == 0)
    watchdog_main(sock, t);
  if (dog < 0) {
    int32_t reply = -errno;
    sys(SYS_sendto, sock, arg(&reply), sizeof(reply), MSG_NOSIGNAL, 0, 0);
  }
  die(0);
}

// ---------------------------------------------------------------------------
// The node's side.

struct shared_state {
  std::mutex mtx;
  size_t leases = 0;
  int fd = -1;
  pid_t pid = 0;
  std::vector<std::string> cgroups;
  bool warned = false;
};

shared_state& shared() {
  // Never destroyed: a lease may end during static destruction.
  static auto* s = new shared_state;
  return *s;
}

/// Starts the watchdog; returns its pid and the node's end, or 0 and -1.
std::pair<pid_t, int> start() {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    log::logger()->warn("cannot start the watchdog: socketpair: {}",
                        std::strerror(errno));
    return {0, -1};
  }
  void* mem = ::mmap(nullptr, sizeof(table), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) {
    log::logger()->warn("cannot start the watchdog: mmap: {}",
                        std::strerror(errno));
    ::close(sv[0]);
    ::close(sv[1]);
    return {0, -1};
  }
  // An intermediate process that exits at once, so that the watchdog is
  // not a child of ours; it sends no SIGCHLD (exit signal 0) and only a
  // `waitpid` with __WALL sees it, so a host's `waitpid(-1)` never does.
  auto middle = raw_fork(0);
  if (middle == 0)
    middle_main(sv[1], *static_cast<table*>(mem));
  auto err = errno;
  ::munmap(mem, sizeof(table));
  ::close(sv[1]);
  if (middle < 0) {
    log::logger()->warn("cannot start the watchdog: clone: {}",
                        std::strerror(err));
    ::close(sv[0]);
    return {0, -1};
  }
  int status = 0;
  while (::waitpid(middle, &status, __WALL) < 0 && errno == EINTR)
    ;
  // The watchdog's pid once it is ready, or the middle's -errno; the end
  // of file if both died first.
  int32_t reply = 0;
  pollfd p{sv[0], POLLIN, 0};
  while (::poll(&p, 1, 10000) < 0 && errno == EINTR)
    ;
  auto n = ::recv(sv[0], &reply, sizeof(reply), MSG_DONTWAIT);
  if (n != static_cast<ssize_t>(sizeof(reply)) || reply <= 0) {
    log::logger()->warn("cannot start the watchdog: {}",
                        n == static_cast<ssize_t>(sizeof(reply))
                          ? std::strerror(-reply)
                          : "the intermediate process ended without an answer");
    ::close(sv[0]);
    return {0, -1};
  }
  log::logger()->debug("watchdog started: pid {}", reply);
  return {static_cast<pid_t>(reply), sv[0]};
}

/// Sends one record; the caller holds the mutex.
void send_record(shared_state& s, const char* data, size_t n) {
  if (s.fd < 0)
    return;
  ssize_t rc;
  while ((rc = ::send(s.fd, data, n, MSG_NOSIGNAL)) < 0 && errno == EINTR)
    ;
  if (rc < 0 && !s.warned) {
    s.warned = true;
    log::logger()->warn("the watchdog (pid {}) is gone ({}): processes of this "
                        "node may outlive it if it dies",
                        s.pid, std::strerror(errno));
  }
}

void send_group(char type, pid_t pgid) {
  char rec[1 + sizeof(int32_t)];
  rec[0] = type;
  auto v = static_cast<int32_t>(pgid);
  std::memcpy(rec + 1, &v, sizeof(v));
  auto& s = shared();
  std::lock_guard<std::mutex> guard{s.mtx};
  send_record(s, rec, sizeof(rec));
}

} // namespace

watchdog::lease::lease() {
  auto& s = shared();
  std::lock_guard<std::mutex> guard{s.mtx};
  if (s.leases++ == 0) {
    std::tie(s.pid, s.fd) = start();
    s.warned = false;
  }
}

watchdog::lease::~lease() {
  auto& s = shared();
  std::lock_guard<std::mutex> guard{s.mtx};
  if (--s.leases > 0 || s.fd < 0)
    return;
  // A normal end: the watchdog exits without killing anything.
  send_record(s, &rec_bye, 1);
  ::close(s.fd);
  s.fd = -1;
  s.pid = 0;
  s.cgroups.clear();
}

bool watchdog::watch_cgroup(const std::string& dir) {
  auto& s = shared();
  std::lock_guard<std::mutex> guard{s.mtx};
  if (s.fd < 0)
    return false;
  if (dir.empty() || dir.front() != '/' || dir.size() > max_dir
      || dir.find('\0') != std::string::npos) {
    log::logger()->warn(
      "the watchdog cannot watch cgroup {}: not an absolute path "
      "of at most {} bytes",
      dir, max_dir);
    return false;
  }
  if (std::find(s.cgroups.begin(), s.cgroups.end(), dir) != s.cgroups.end())
    return true;
  if (s.cgroups.size() >= max_cgroups) {
    log::logger()->warn(
      "the watchdog cannot watch cgroup {}: it watches {} already", dir,
      max_cgroups);
    return false;
  }
  s.cgroups.push_back(dir);
  std::string rec = rec_watch_cgroup + dir;
  send_record(s, rec.data(), rec.size());
  return true;
}

void watchdog::forget_cgroup(const std::string& dir) {
  auto& s = shared();
  std::lock_guard<std::mutex> guard{s.mtx};
  auto i = std::find(s.cgroups.begin(), s.cgroups.end(), dir);
  if (s.fd < 0 || i == s.cgroups.end())
    return;
  s.cgroups.erase(i);
  std::string rec = rec_forget_cgroup + dir;
  send_record(s, rec.data(), rec.size());
}

void watchdog::watch_group(pid_t pgid) {
  send_group(rec_watch_group, pgid);
}

void watchdog::forget_group(pid_t pgid) {
  send_group(rec_forget_group, pgid);
}

pid_t watchdog::pid() {
  auto& s = shared();
  std::lock_guard<std::mutex> guard{s.mtx};
  return s.pid;
}

} // namespace sandbox
