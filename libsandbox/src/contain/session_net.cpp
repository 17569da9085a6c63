#include "sandbox/contain/session_net.hpp"

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netdb.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "process/child_syscall.hpp"
#include "process/vm_child.hpp"
#include "sandbox/validation.hpp"

namespace sandbox {

using detail::child_sys;
using detail::clone_args_v2;

namespace {

// -- entries ------------------------------------------------------------------

error bad_entry(std::string_view entry, std::string_view why) {
  return error{errc::invalid_argument,
               fmt::format("invalid network destination {}: {}",
                           quote_for_message(entry), why)};
}

struct host_port {
  std::string host;
  uint16_t port = 0;
};

result<host_port> split_entry(std::string_view entry) {
  host_port hp;
  auto colon = entry.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return bad_entry(entry, "expected HOST:PORT");
  auto host = entry.substr(0, colon);
  auto port = entry.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']')
      return bad_entry(entry, "expected [IPV6]:PORT");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad_entry(entry, "an IPv6 address goes in brackets: [IPV6]:PORT");
  }
  if (port.empty() || port.size() > 5
      || !std::all_of(port.begin(), port.end(),
                      [](char c) { return c >= '0' && c <= '9'; }))
    return bad_entry(entry, "the port must be a number from 1 to 65535");
  auto n = std::stoul(std::string{port});
  if (n == 0 || n > 65535)
    return bad_entry(entry, "the port must be a number from 1 to 65535");
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-'
          || c == ':' || c == '%' || c == '_'))
      return bad_entry(entry, "the host is neither an address nor a name");
  hp.host = std::string{host};
  hp.port = static_cast<uint16_t>(n);
  return hp;
}

/// Refuses addresses that name no single host.
result<void> check_address(std::string_view entry, const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    auto a = ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr);
    if (a == INADDR_ANY || a == INADDR_BROADCAST || IN_MULTICAST(a))
      return bad_entry(entry, "not the address of one host");
    return {};
  }
  auto& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
  if (IN6_IS_ADDR_UNSPECIFIED(&a) || IN6_IS_ADDR_MULTICAST(&a)
      || IN6_IS_ADDR_V4MAPPED(&a))
    return bad_entry(entry, "not the address of one host");
  return {};
}

std::string numeric(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr,
                buf, sizeof(buf));
  else
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr,
                buf, sizeof(buf));
  return buf;
}

// -- the socket maker ---------------------------------------------------------
//
// A clone of the calling thread (CLONE_VM, CLONE_VFORK, CLONE_FILES: it
// shares the memory and the descriptor table, the thread waits until it
// exits) enters the init's user and network namespaces and makes the
// socket, which lands in the shared table. Entering a user namespace needs
// a single-threaded process with its own fs_struct: a new process is one.
// Only system calls run there (see child_syscall.hpp); every signal stays
// blocked, so no handler of the node runs on its stack.

struct maker_plan {
  int ns_pidfd = -1;
  int domain = 0;
  int type = 0;
  /// A netlink request to send from inside (RTM_NEWADDR), or null.
  const void* request = nullptr;
  size_t request_len = 0;
  void* reply = nullptr;
  size_t reply_cap = 0;
  long reply_len = 0;
  int fd = -1;
  int err = 0;
  int stage = 0; // 1 setns, 2 socket, 3 netlink
};

SANDBOX_CHILD_FN int maker_main(void* arg) {
  auto* p = static_cast<maker_plan*>(arg);
  long r = child_sys(SYS_setns, p->ns_pidfd, CLONE_NEWUSER | CLONE_NEWNET);
  if (r < 0) {
    p->err = static_cast<int>(-r);
    p->stage = 1;
    return 1;
  }
  r = child_sys(SYS_socket, p->domain, p->type | SOCK_CLOEXEC,
                p->request != nullptr ? NETLINK_ROUTE : 0);
  if (r < 0) {
    p->err = static_cast<int>(-r);
    p->stage = 2;
    return 1;
  }
  p->fd = static_cast<int>(r);
  if (p->request == nullptr)
    return 0;
  // Sent from inside: the sender holds CAP_NET_ADMIN in the session's
  // user namespace, which owns its network namespace.
  r = child_sys(SYS_sendto, p->fd, reinterpret_cast<long>(p->request),
                static_cast<long>(p->request_len), 0, 0);
  if (r >= 0)
    r = child_sys(SYS_recvfrom, p->fd, reinterpret_cast<long>(p->reply),
                  static_cast<long>(p->reply_cap), 0, 0);
  if (r < 0) {
    p->err = static_cast<int>(-r);
    p->stage = 3;
    return 1;
  }
  p->reply_len = r;
  return 0;
}

/// Runs `maker_main` with `plan`; -errno of the clone, else 0.
long run_maker(maker_plan& plan) {
#if defined(__x86_64__)
  alignas(64) char stack[16 * 1024];
  clone_args_v2 args;
  args.flags = CLONE_VM | CLONE_VFORK | CLONE_FILES;
  // No SIGCHLD: a host's waitpid(-1) never sees it.
  args.exit_signal = 0;
  args.stack = reinterpret_cast<uintptr_t>(stack);
  args.stack_size = sizeof(stack);
  long pid;
  {
    detail::all_signals_blocked blocked;
    pid = detail::clone3_vm(args, maker_main, &plan);
  }
  if (pid < 0)
    return pid;
  detail::reap(static_cast<pid_t>(pid));
  return 0;
#else
  (void) plan;
  return -ENOSYS;
#endif
}

const char* maker_stage(int stage) {
  switch (stage) {
    case 1:
      return "setns into the session's network namespace";
    case 2:
      return "socket in the session's network namespace";
    default:
      return "netlink request in the session's network namespace";
  }
}

} // namespace

bool net_destination::loopback() const noexcept {
  if (addr.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr.s_addr)
            >> 24)
           == 127;
  return IN6_IS_ADDR_LOOPBACK(
    &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr);
}

result<void> validate_allow_entry(std::string_view entry) {
  auto hp = split_entry(entry);
  if (!hp)
    return hp.error();
  return {};
}

result<std::vector<net_destination>>
resolve_allowlist(const std::vector<std::string>& entries) {
  std::vector<net_destination> out;
  for (auto& entry : entries) {
    auto hp = split_entry(entry);
    if (!hp)
      return hp.error();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* res = nullptr;
    auto port = std::to_string(hp->port);
    int rc = ::getaddrinfo(hp->host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0)
      return bad_entry(entry, fmt::format("cannot resolve {}: {}", hp->host,
                                          ::gai_strerror(rc)));
    for (auto* ai = res; ai != nullptr; ai = ai->ai_next) {
      if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
        continue;
      if (auto ok = check_address(entry, ai->ai_addr); !ok) {
        ::freeaddrinfo(res);
        return ok.error();
      }
      net_destination d;
      d.entry = entry;
      d.port = hp->port;
      std::memcpy(&d.addr, ai->ai_addr, ai->ai_addrlen);
      d.addr_len = static_cast<socklen_t>(ai->ai_addrlen);
      d.address = numeric(ai->ai_addr);
      bool dup = std::any_of(out.begin(), out.end(), [&d](auto& x) {
        return x.address == d.address && x.port == d.port;
      });
      if (!dup)
        out.push_back(std::move(d));
    }
    ::freeaddrinfo(res);
  }
  return out;
}

result<unique_fd> socket_in_namespace(int ns_pidfd, int domain, int type) {
  maker_plan plan;
  plan.ns_pidfd = ns_pidfd;
  plan.domain = domain;
  plan.type = type;
  if (long rc = run_maker(plan); rc < 0)
    return make_errno_error(static_cast<int>(-rc),
                            "clone (to make a socket in a session)");
  unique_fd fd{plan.fd};
  if (plan.stage != 0)
    return make_errno_error(plan.err, maker_stage(plan.stage));
  return fd;
}

result<void> add_local_address(int ns_pidfd, const net_destination& dest) {
  if (dest.loopback())
    return {};
  struct {
    nlmsghdr nh;
    ifaddrmsg ifa;
    char attrs[64];
  } req{};
  bool v4 = dest.addr.ss_family == AF_INET;
  const void* raw
    = v4 ? static_cast<const void*>(
        &reinterpret_cast<const sockaddr_in*>(&dest.addr)->sin_addr)
         : static_cast<const void*>(
           &reinterpret_cast<const sockaddr_in6*>(&dest.addr)->sin6_addr);
  size_t raw_len = v4 ? 4 : 16;
  req.nh.nlmsg_type = RTM_NEWADDR;
  req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
  req.nh.nlmsg_seq = 1;
  req.ifa.ifa_family = static_cast<unsigned char>(dest.addr.ss_family);
  req.ifa.ifa_prefixlen = v4 ? 32 : 128;
  req.ifa.ifa_flags = IFA_F_NODAD;
  req.ifa.ifa_scope = RT_SCOPE_HOST;
  // A new network namespace has one interface, the loopback, index 1.
  req.ifa.ifa_index = 1;
  size_t len = NLMSG_LENGTH(sizeof(ifaddrmsg));
  for (auto type : {IFA_LOCAL, IFA_ADDRESS}) {
    auto* rta = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&req)
                                          + NLMSG_ALIGN(len));
    rta->rta_type = type;
    rta->rta_len = static_cast<unsigned short>(RTA_LENGTH(raw_len));
    std::memcpy(RTA_DATA(rta), raw, raw_len);
    len = NLMSG_ALIGN(len) + RTA_ALIGN(rta->rta_len);
  }
  req.nh.nlmsg_len = static_cast<uint32_t>(len);
  alignas(nlmsghdr) char reply[512];
  maker_plan plan;
  plan.ns_pidfd = ns_pidfd;
  plan.domain = AF_NETLINK;
  plan.type = SOCK_RAW;
  plan.request = &req;
  plan.request_len = len;
  plan.reply = reply;
  plan.reply_cap = sizeof(reply);
  auto what = fmt::format("cannot add {} to the session's loopback",
                          dest.address);
  if (long rc = run_maker(plan); rc < 0)
    return make_errno_error(static_cast<int>(-rc), what);
  unique_fd fd{plan.fd};
  if (plan.stage != 0)
    return error{errc::io_error,
                 fmt::format("{}: {}: {}", what, maker_stage(plan.stage),
                             std::strerror(plan.err))};
  auto* nh = reinterpret_cast<nlmsghdr*>(reply);
  if (plan.reply_len >= static_cast<long>(NLMSG_LENGTH(sizeof(nlmsgerr)))
      && nh->nlmsg_type == NLMSG_ERROR) {
    int err = -static_cast<nlmsgerr*>(NLMSG_DATA(nh))->error;
    // Two entries of one address: the first added it.
    if (err == 0 || err == EEXIST)
      return {};
    return error{errc::io_error,
                 fmt::format("{}: {}", what, std::strerror(err))};
  }
  return error{errc::io_error, fmt::format("{}: no answer", what)};
}

result<unique_fd> listen_tcp(const sockaddr* addr, socklen_t len,
                             std::string_view what, unique_fd fd) {
  if (!fd) {
    fd.reset(::socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd)
      return make_errno_error(errno, fmt::format("socket ({})", what));
  }
  int on = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (addr->sa_family == AF_INET6)
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
  // EADDRINUSE at bind: the port is taken. At listen: another socket bound
  // it beside ours (both SO_REUSEADDR, e.g. another process's node that
  // leased the same port) and listened first. Either way the port is only
  // unavailable.
  auto failed = [what](const char* step) -> error {
    int err = errno;
    if (err == EADDRINUSE)
      return error{errc::port_unavailable,
                   fmt::format("cannot listen on {}: {}", what,
                               std::strerror(err))};
    return make_errno_error(err, fmt::format("{} ({})", step, what));
  };
  if (::bind(fd.get(), addr, len) != 0)
    return failed("bind");
  if (::listen(fd.get(), 128) != 0)
    return failed("listen");
  return fd;
}

} // namespace sandbox
