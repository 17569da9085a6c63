#include "contain/lookup_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>

#include <fmt/format.h>

// libfuse 3.14 (Debian 12): the lowlevel API, driven by the server
// thread's own poll loop.
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#include <fuse_lowlevel.h>

#include "contain/lookup_wire.hpp"
#include "core/paths.hpp"
#include "sandbox/process/process_tree.hpp"

namespace sandbox {

using namespace lookup_wire;

namespace {

/// How long the kernel may keep a name or an attribute, in seconds (the
/// answers never change while the session lives).
constexpr double forever = double(uint64_t{1} << 30);

struct stat directory_attr(uint64_t id) {
  struct stat a {};
  a.st_ino = id;
  a.st_mode = S_IFDIR | 0755;
  a.st_nlink = 2;
  a.st_uid = ::geteuid();
  a.st_gid = ::getegid();
  a.st_blksize = 4096;
  return a;
}

class server;

/// One file system, as the server thread holds it.
struct connection {
  struct node {
    /// Relative to the denied directory ("" for itself).
    std::string path;
    std::map<std::string, uint64_t> children;
  };

  uint64_t id = 0;
  server* owner = nullptr;
  /// libfuse's side of it; it owns the `/dev/fuse` descriptor.
  fuse_session* session = nullptr;
  /// Where libfuse reads a request into (its memory is libfuse's malloc).
  fuse_buf request{};
  std::string path;
  /// Node ids are indices + 1 (1 is the root, as FUSE wants).
  std::vector<node> nodes{node{}};

  connection() = default;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// Closing the only descriptor of its device ends the connection.
  ~connection() {
    if (session != nullptr)
      fuse_session_destroy(session);
    std::free(request.mem);
  }

  node* at(fuse_ino_t ino) {
    return ino >= 1 && ino <= nodes.size() ? &nodes[ino - 1] : nullptr;
  }

  /// The directories that lead to `keep`, when it lies inside.
  void add_way_to(const std::string& keep) {
    if (keep == path || !detail::inside(keep, path))
      return;
    uint64_t at = FUSE_ROOT_ID;
    size_t from = path.size() + 1;
    while (from <= keep.size()) {
      auto end = std::min(keep.find('/', from), keep.size());
      auto name = keep.substr(from, end - from);
      from = end + 1;
      if (name.empty())
        continue;
      auto i = nodes[at - 1].children.find(name);
      if (i == nodes[at - 1].children.end()) {
        auto rel = nodes[at - 1].path;
        rel += (rel.empty() ? "" : "/") + name;
        nodes.push_back(node{std::move(rel), {}});
        i = nodes[at - 1].children.emplace(name, nodes.size()).first;
      }
      at = i->second;
    }
  }
};

/// The answering thread's state. It runs with a descriptor table of its
/// own, which holds nothing of the node's but its two sockets.
class server {
public:
  server(int control, int reports) : control_(control), reports_(reports) {
  }

  /// Until the node closes its end of the control socket.
  void run() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.assign(1, pollfd{control_.get(), POLLIN, 0});
      for (auto& c : conns_)
        fds.push_back(pollfd{fuse_session_fd(c->session), POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR)
          continue;
        return;
      }
      // Requests first: a `close` below may remove a connection.
      std::vector<uint64_t> ended;
      for (size_t i = 1; i < fds.size(); ++i)
        if (fds[i].revents != 0 && !drain(*conns_[i - 1]))
          ended.push_back(conns_[i - 1]->id);
      for (auto id : ended)
        forget(id);
      if (fds[0].revents != 0 && !on_control())
        return;
    }
  }

  /// Whether the request came from one of the node's threads.
  bool own(fuse_req_t req) const {
    auto pid = fuse_req_ctx(req)->pid;
    return pid != 0 && ::syscall(SYS_tgkill, self_, pid, 0) == 0;
  }

  /// Reports a refusal and waits until the node has (a command's result
  /// then carries it).
  void refuse(connection& c, fuse_req_t req, const std::string& relative) {
    std::string msg(1, report_msg);
    put(msg, c.id);
    put(msg, static_cast<uint32_t>(fuse_req_ctx(req)->pid));
    msg += relative.empty() ? c.path : c.path + "/" + relative;
    char ack = 0;
    if (send_message(reports_.get(), msg))
      while (::recv(reports_.get(), &ack, 1, 0) < 0 && errno == EINTR) {
      }
  }

private:
  bool on_control() {
    auto fd = receive_message(control_.get(), buf_);
    if (buf_.empty())
      return false; // the node closed its end
    const char* at = buf_.data() + 1;
    const char* end = buf_.data() + buf_.size();
    uint64_t id = 0;
    if (!take(at, end, id))
      return true;
    if (buf_[0] == close_msg) {
      forget(id);
      return true;
    }
    if (buf_[0] != make_msg)
      return true;
    auto c = std::make_unique<connection>();
    c->id = id;
    c->owner = this;
    std::vector<std::string> strings;
    while (at < end) {
      auto len = strnlen(at, static_cast<size_t>(end - at));
      strings.emplace_back(at, len);
      at += len + 1;
    }
    if (strings.empty()) {
      (void) send_message(control_.get(), fail_text(id, "no path"));
      return true;
    }
    c->path = strings.front();
    for (size_t i = 1; i < strings.size(); ++i)
      c->add_way_to(strings[i]);
    std::string error;
    auto mount = make_mount(*c, error);
    if (!mount) {
      (void) send_message(control_.get(), fail_text(id, error));
      return true;
    }
    std::string ok(1, made_msg);
    put(ok, id);
    if (send_message(control_.get(), ok, mount.get()))
      conns_.push_back(std::move(c));
    return true;
  }

  static std::string fail_text(uint64_t id, const std::string& text) {
    std::string out(1, failed_msg);
    put(out, id);
    return out + text;
  }

  /// Opens `/dev/fuse` (here only), hands it to a libfuse session and makes
  /// the detached mount.
  static unique_fd make_mount(connection& c, std::string& error) {
    auto fail = [&error](const char* what) {
      error = fmt::format("{}: {}", what, std::strerror(errno));
      return unique_fd{};
    };
    unique_fd dev{::open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK)};
    if (!dev)
      return fail("open /dev/fuse");
    char name[] = "sandbox-lookup";
    char* argv[] = {name, nullptr};
    fuse_args args = FUSE_ARGS_INIT(1, argv);
    c.session = fuse_session_new(&args, &operations, sizeof(operations), &c);
    fuse_opt_free_args(&args);
    if (c.session == nullptr) {
      errno = ENOMEM;
      return fail("fuse_session_new");
    }
    // "/dev/fd/N": the session adopts the open device instead of mounting
    // (lib/fuse_lowlevel.c); from here on it closes it.
    auto fd = std::to_string(dev.get());
    if (fuse_session_mount(c.session, ("/dev/fd/" + fd).c_str()) != 0) {
      errno = EBADF;
      return fail("fuse_session_mount");
    }
    (void) dev.release();
    unique_fd fs{::fsopen("fuse", FSOPEN_CLOEXEC)};
    if (!fs)
      return fail("fsopen fuse");
    auto uid = std::to_string(::geteuid());
    auto gid = std::to_string(::getegid());
    auto set = [&fs](const char* key, const char* value) {
      return ::fsconfig(fs.get(), FSCONFIG_SET_STRING, key, value, 0) == 0;
    };
    if (!set("fd", fd.c_str()) || !set("rootmode", "40755")
        || !set("user_id", uid.c_str()) || !set("group_id", gid.c_str())
        || ::fsconfig(fs.get(), FSCONFIG_SET_FLAG, "allow_other", nullptr, 0)
             != 0
        || ::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
      return fail("fsconfig fuse");
    unique_fd mnt{
      ::fsmount(fs.get(), FSMOUNT_CLOEXEC,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)};
    if (!mnt)
      return fail("fsmount fuse");
    return mnt;
  }

  void forget(uint64_t id) {
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(),
                                [id](auto& c) { return c->id == id; }),
                 conns_.end());
  }

  /// Answers what is queued; false once the connection ended.
  static bool drain(connection& c) {
    for (;;) {
      // libfuse retries a request interrupted before it was read (ENOENT)
      // and answers 0 once the connection is gone (ENODEV: unmounted, the
      // session's namespace is gone).
      auto n = fuse_session_receive_buf(c.session, &c.request);
      if (n == -EINTR)
        continue;
      if (n == -EAGAIN)
        return true;
      if (n <= 0)
        return false;
      fuse_session_process_buf(c.session, &c.request);
    }
  }

  static const fuse_lowlevel_ops operations;

  unique_fd control_;
  unique_fd reports_;
  pid_t self_ = ::getpid();
  std::vector<std::unique_ptr<connection>> conns_;
  std::string buf_;
};

// -- the file system's operations (libfuse calls them from `drain`) -----------

connection& of(fuse_req_t req) {
  return *static_cast<connection*>(fuse_req_userdata(req));
}

void on_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto& c = of(req);
  auto* n = c.at(parent);
  if (n == nullptr) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  auto i = n->children.find(name);
  if (i != n->children.end()) {
    fuse_entry_param e{};
    e.ino = i->second;
    e.generation = 1;
    e.entry_timeout = forever;
    e.attr_timeout = forever;
    e.attr = directory_attr(i->second);
    fuse_reply_entry(req, &e);
    return;
  }
  // The node's own lookups find an empty directory, as they would below
  // any cover; a command's is a refused read.
  if (c.owner->own(req)) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  c.owner->refuse(c, req,
                  n->path.empty() ? std::string{name} : n->path + "/" + name);
  fuse_reply_err(req, EPERM);
}

void on_getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  if (of(req).at(ino) == nullptr) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  auto attr = directory_attr(ino);
  fuse_reply_attr(req, &attr, forever);
}

void on_opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto& c = of(req);
  if (c.at(ino) == nullptr) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  if (ino == FUSE_ROOT_ID && !c.owner->own(req)) {
    c.owner->refuse(c, req, {});
    fuse_reply_err(req, EPERM);
    return;
  }
  fuse_reply_open(req, fi);
}

void on_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                fuse_file_info*) {
  auto* n = of(req).at(ino);
  if (n == nullptr) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  std::vector<std::pair<std::string, uint64_t>> entries{{".", ino},
                                                        {"..", FUSE_ROOT_ID}};
  for (auto& [name, id] : n->children)
    entries.emplace_back(name, id);
  std::string out(size, '\0');
  size_t used = 0;
  for (auto i = static_cast<size_t>(std::max<off_t>(off, 0));
       i < entries.size(); ++i) {
    auto& [name, id] = entries[i];
    struct stat st {};
    st.st_ino = id;
    st.st_mode = S_IFDIR;
    auto step = fuse_add_direntry(req, out.data() + used, size - used,
                                  name.c_str(), &st, static_cast<off_t>(i + 1));
    if (step > size - used)
      break;
    used += step;
  }
  fuse_reply_buf(req, out.data(), used);
}

void on_statfs(fuse_req_t req, fuse_ino_t) {
  struct statvfs st {};
  st.f_bsize = 4096;
  st.f_frsize = 4096;
  st.f_namemax = 255;
  fuse_reply_statfs(req, &st);
}

void on_access(fuse_req_t req, fuse_ino_t, int) {
  fuse_reply_err(req, 0);
}

/// Everything that would change it: Landlock refuses a command's writes
/// here before they arrive, the node's are refused by name. (What libfuse
/// is given no operation for it answers ENOSYS: extended attributes,
/// `statx`, and the kernel stops asking.)
template <class... Ts>
void on_change(fuse_req_t req, Ts...) {
  fuse_reply_err(req, EPERM);
}

fuse_lowlevel_ops make_operations() {
  fuse_lowlevel_ops ops{};
  ops.lookup = on_lookup;
  ops.getattr = on_getattr;
  ops.opendir = on_opendir;
  ops.readdir = on_readdir;
  ops.statfs = on_statfs;
  ops.access = on_access;
  ops.setattr = on_change<fuse_ino_t, struct stat*, int, fuse_file_info*>;
  ops.readlink = on_change<fuse_ino_t>;
  ops.mknod = on_change<fuse_ino_t, const char*, mode_t, dev_t>;
  ops.mkdir = on_change<fuse_ino_t, const char*, mode_t>;
  ops.unlink = on_change<fuse_ino_t, const char*>;
  ops.rmdir = on_change<fuse_ino_t, const char*>;
  ops.symlink = on_change<const char*, fuse_ino_t, const char*>;
  ops.rename
    = on_change<fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned int>;
  ops.link = on_change<fuse_ino_t, fuse_ino_t, const char*>;
  ops.open = on_change<fuse_ino_t, fuse_file_info*>;
  ops.create = on_change<fuse_ino_t, const char*, mode_t, fuse_file_info*>;
  ops.setxattr = on_change<fuse_ino_t, const char*, const char*, size_t, int>;
  ops.removexattr = on_change<fuse_ino_t, const char*>;
  return ops;
}

const fuse_lowlevel_ops server::operations = make_operations();

/// Closes every descriptor of the calling thread's table but `keep` (and
/// stdio, for a sanitizer's report).
void close_all_but(std::array<int, 2> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned from = 3;
  for (int k : keep) {
    if (k < 3)
      continue;
    if (static_cast<unsigned>(k) > from)
      ::close_range(from, static_cast<unsigned>(k) - 1, 0);
    from = static_cast<unsigned>(k) + 1;
  }
  ::close_range(from, ~0U, 0);
}

} // namespace

pid_t process_group_of(pid_t pid) {
  std::string line;
  proc_stat st;
  if (!read_small_file(fmt::format("/proc/{}/stat", pid), line)
      || !parse_proc_stat(line, st))
    return 0;
  return st.pgid;
}

bool lookup_server::available() {
  static const bool ok = [] {
    unique_fd dev{::open("/dev/fuse", O_RDWR | O_CLOEXEC)};
    unique_fd fs{::fsopen("fuse", FSOPEN_CLOEXEC)};
    return dev && fs;
  }();
  return ok;
}

result<std::unique_ptr<lookup_server>> lookup_server::start() {
  int control[2];
  int reports[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) != 0)
    return error{errc::unsupported,
                 fmt::format("socketpair: {}", std::strerror(errno))};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, reports) != 0) {
    int err = errno;
    ::close(control[0]);
    ::close(control[1]);
    return error{errc::unsupported,
                 fmt::format("socketpair: {}", std::strerror(err))};
  }
  std::unique_ptr<lookup_server> s{new lookup_server};
  s->control_.reset(control[0]);
  s->reports_.reset(reports[0]);
  std::promise<int> ready;
  s->server_ = std::thread([&ready, c = control[1], r = reports[1]] {
    if (::unshare(CLONE_FILES) != 0) {
      ready.set_value(errno);
      return;
    }
    close_all_but({c, r});
    ready.set_value(0);
    server{c, r}.run();
  });
  int err = ready.get_future().get();
  // The server holds its ends in its own table now.
  ::close(control[1]);
  ::close(reports[1]);
  if (err != 0) {
    s->server_.join();
    return error{errc::unsupported,
                 fmt::format("unshare(CLONE_FILES): {}", std::strerror(err))};
  }
  s->reporter_ = std::thread([p = s.get()] { p->report_loop(); });
  return s;
}

lookup_server::~lookup_server() {
  // The server sees its control socket end, and ends every connection as
  // it goes; the reporter acknowledges until then.
  ::shutdown(control_.get(), SHUT_RDWR);
  if (server_.joinable())
    server_.join();
  ::shutdown(reports_.get(), SHUT_RDWR);
  if (reporter_.joinable())
    reporter_.join();
}

void lookup_server::report_loop() {
  std::string buf;
  for (;;) {
    (void) receive_message(reports_.get(), buf);
    if (buf.empty())
      return;
    const char* at = buf.data() + 1;
    const char* end = buf.data() + buf.size();
    uint64_t id = 0;
    uint32_t pid = 0;
    if (buf[0] == report_msg && take(at, end, id) && take(at, end, pid)) {
      std::shared_ptr<report_fn> report;
      {
        std::lock_guard<std::mutex> guard{reports_mtx_};
        auto i = reports_to_.find(id);
        if (i != reports_to_.end())
          report = i->second;
      }
      auto p = static_cast<pid_t>(pid);
      if (report)
        (*report)(denied_read{p, process_group_of(p), std::string{at, end}});
    }
    if (!send_message(reports_.get(), std::string(1, ack_msg)))
      return;
  }
}

result<lookup_server::made>
lookup_server::make(const std::string& path,
                    const std::vector<std::string>& keep,
                    std::shared_ptr<report_fn> report) {
  std::lock_guard<std::mutex> guard{make_mtx_};
  auto id = next_id_++;
  std::string msg(1, make_msg);
  put(msg, id);
  msg += path;
  for (auto& k : keep)
    msg += '\0' + k;
  if (msg.size() > max_message)
    return error{errc::invalid_argument,
                 fmt::format("denied path too long: {}", path)};
  {
    std::lock_guard<std::mutex> lock{reports_mtx_};
    reports_to_[id] = std::move(report);
  }
  auto forget = [this, id] {
    std::lock_guard<std::mutex> lock{reports_mtx_};
    reports_to_.erase(id);
  };
  if (!send_message(control_.get(), msg)) {
    forget();
    return error{errc::unsupported,
                 fmt::format("lookup server: {}", std::strerror(errno))};
  }
  std::string answer;
  auto mount = receive_message(control_.get(), answer);
  const char* at = answer.data() + 1;
  const char* end = answer.data() + answer.size();
  uint64_t got = 0;
  if (!answer.empty() && take(at, end, got) && got == id
      && answer[0] == made_msg && mount)
    return made{id, std::move(mount)};
  forget();
  return error{errc::unsupported, answer.empty() || answer[0] != failed_msg
                                    ? std::string{"lookup server: no answer"}
                                    : std::string{at, end}};
}

void lookup_server::close(uint64_t id) {
  std::string msg(1, close_msg);
  put(msg, id);
  (void) send_message(control_.get(), msg);
  std::lock_guard<std::mutex> lock{reports_mtx_};
  reports_to_.erase(id);
}

} // namespace sandbox
