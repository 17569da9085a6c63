#include "sandbox/contain/read_guard.hpp"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <signal.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "contain/lookup_server.hpp"
#include "sandbox/io/reactor.hpp"

namespace sandbox {

/// The group's descriptor on the reactor; it answers every event of
/// another process "denied" (a marked inode is always a placeholder) after
/// the guard reported it.
struct read_guard::watcher : std::enable_shared_from_this<watcher> {
  boost::asio::posix::stream_descriptor fd;
  std::weak_ptr<read_guard> guard;
  pid_t self = ::getpid();

  watcher(reactor& r, int group) : fd(r.context(), group) {
  }

  void wait() {
    fd.async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [self = shared_from_this()](const boost::system::error_code& ec) {
        if (ec)
          return;
        self->drain();
        self->wait();
      });
  }

  void drain() {
    alignas(fanotify_event_metadata) char buf[4096];
    for (;;) {
      auto n = ::read(fd.native_handle(), buf, sizeof(buf));
      if (n <= 0)
        return; // EAGAIN: nothing more queued
      auto len = n;
      for (auto* m = reinterpret_cast<fanotify_event_metadata*>(buf);
           FAN_EVENT_OK(m, len); m = FAN_EVENT_NEXT(m, len)) {
        if (m->fd < 0)
          continue; // a queue overflow: nothing to answer
        // The node's own file operations see a placeholder as what it is,
        // empty (a walk passing a denied directory); they refuse denied
        // paths by name themselves.
        bool own = m->pid == self;
        if (auto g = guard.lock(); g && !own)
          g->on_open(m->fd, m->pid);
        fanotify_response r{};
        r.fd = m->fd;
        r.response = own ? FAN_ALLOW : FAN_DENY;
        (void) !::write(fd.native_handle(), &r, sizeof(r));
        ::close(m->fd);
      }
    }
  }
};

bool read_guard::available() {
  static const bool ok = [] {
    int fd = ::fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY);
    if (fd < 0)
      return false;
    ::close(fd);
    return true;
  }();
  return ok;
}

bool read_guard::lookup_watch() {
  return available() && lookup_server::available();
}

result<std::shared_ptr<read_guard>> read_guard::start(reactor& r,
                                                      bool lookups) {
  int fd = ::fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK,
                           O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return error{errc::unsupported,
                 fmt::format("fanotify_init: {}", std::strerror(errno))};
  std::shared_ptr<read_guard> g{new read_guard};
  g->group_ = fd;
  if (lookups && lookup_server::available()) {
    auto server = lookup_server::start();
    if (!server)
      return server.error();
    g->lookups_ = std::move(*server);
  }
  g->watcher_ = std::make_shared<watcher>(r, fd);
  g->watcher_->guard = g;
  g->watcher_->wait();
  return g;
}

read_guard::~read_guard() {
  // Closed on the reactor, where its wait runs; the kernel then lets any
  // open still waiting through (to an empty placeholder).
  auto w = std::move(watcher_);
  boost::asio::post(w->fd.get_executor(), [w] {
    boost::system::error_code ec;
    w->fd.close(ec);
  });
  // No session is left to mount the shared placeholders.
  if (!shared_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(shared_dir_, ec);
  }
}

void read_guard::on_open(int fd, pid_t pid) {
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return;
  std::string path;
  std::shared_ptr<std::function<void(denied_read)>> report;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = entries_.find({st.st_dev, st.st_ino});
    if (i == entries_.end())
      return;
    path = i->second.path;
    report = i->second.report;
  }
  if (!report)
    report = session_of(pid);
  if (report)
    (*report)(denied_read{pid, process_group_of(pid), std::move(path)});
}

std::shared_ptr<std::function<void(denied_read)>>
read_guard::session_of(pid_t pid) {
  // The process waits for our answer: its /proc entry stays. A command
  // may make PID namespaces of its own (nested, at most 32 deep): their
  // parents lead to the session's.
  unique_fd ns{
    ::open(fmt::format("/proc/{}/ns/pid", pid).c_str(), O_RDONLY | O_CLOEXEC)};
  for (int depth = 0; ns && depth <= 32; ++depth) {
    struct stat st;
    if (::fstat(ns.get(), &st) != 0)
      break;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (auto i = sessions_.find(st.st_ino); i != sessions_.end())
        return i->second.lock();
    }
    ns.reset(::ioctl(ns.get(), NS_GET_PARENT));
  }
  return nullptr;
}

namespace {

/// The directory names of a guard's placeholders: the node's pid after the
/// prefix, so that those of a node that was killed can be told and removed.
constexpr std::string_view shared_prefix = "sandbox-deny-shared-";
constexpr std::string_view cover_prefix = "sandbox-deny-";

/// A new directory `<parent>/<prefix><our pid>-XXXXXX`.
result<std::string> make_placeholder_directory(const std::string& parent,
                                               std::string_view prefix) {
  auto templ = fmt::format("{}/{}{}-XXXXXX", parent, prefix, ::getpid());
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr)
    return error{errc::io_error, fmt::format("cannot make a directory in {}: "
                                             "{}",
                                             parent, std::strerror(errno))};
  return std::string{buf.data()};
}

/// Removes the placeholder directories in `parent` that a node of our uid
/// left when it was killed: the pid in the name no longer runs. (A node in
/// another PID namespace sharing `parent` and the uid would look dead.)
void sweep_dead_nodes(const std::string& parent) {
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator{parent, ec}) {
    auto name = e.path().filename().string();
    if (name.rfind(cover_prefix, 0) != 0)
      continue;
    auto rest = std::string_view{name}.substr(cover_prefix.size());
    if (rest.rfind(shared_prefix.substr(cover_prefix.size()), 0) == 0)
      rest.remove_prefix(shared_prefix.size() - cover_prefix.size());
    pid_t pid = 0;
    size_t digits = 0;
    for (; digits < rest.size() && digits < 9 && rest[digits] >= '0'
           && rest[digits] <= '9';
         ++digits)
      pid = pid * 10 + (rest[digits] - '0');
    struct stat st;
    if (digits == 0 || digits >= rest.size() || rest[digits] != '-'
        || ::lstat(e.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)
        || st.st_uid != ::geteuid() || !(::kill(pid, 0) != 0 && errno == ESRCH))
      continue;
    std::error_code ignored;
    std::filesystem::remove_all(e.path(), ignored);
  }
}

} // namespace

result<std::string> read_guard::shared_file(const std::string& parent,
                                            const std::string& path) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (auto i = shared_.find(path); i != shared_.end())
    return i->second;
  if (shared_dir_.empty()) {
    sweep_dead_nodes(parent);
    auto made = make_placeholder_directory(parent, shared_prefix);
    if (!made)
      return made.error();
    shared_dir_ = std::move(*made);
  }
  auto ph = fmt::format("{}/f{}", shared_dir_, shared_.size());
  struct stat pst;
  if (::close(::open(ph.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444))
        != 0
      || ::stat(ph.c_str(), &pst) != 0)
    return error{errc::io_error,
                 fmt::format("cannot make {}: {}", ph, std::strerror(errno))};
  // Known before it is marked: no open of it goes unexplained.
  entries_[{pst.st_dev, pst.st_ino}] = entry{path, nullptr};
  if (::fanotify_mark(group_, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, ph.c_str())
      != 0) {
    int err = errno;
    entries_.erase({pst.st_dev, pst.st_ino});
    ::unlink(ph.c_str());
    return error{errc::unsupported,
                 fmt::format("fanotify_mark {}: {}", ph, std::strerror(err))};
  }
  shared_.emplace(path, ph);
  return ph;
}

void read_guard::forget(const cover& c) {
  for (auto& [path, dir] : c.marked_)
    ::fanotify_mark(group_, FAN_MARK_REMOVE,
                    FAN_OPEN_PERM | (dir ? FAN_ONDIR : 0), AT_FDCWD,
                    path.c_str());
  std::lock_guard<std::mutex> guard{mtx_};
  for (auto& k : c.keys_)
    entries_.erase(k);
  if (auto i = c.pid_ns_ != 0 ? sessions_.find(c.pid_ns_) : sessions_.end();
      i != sessions_.end() && i->second.lock() == c.report_)
    sessions_.erase(i);
}

void read_guard::cover::bind(pid_t init) {
  auto g = guard_.lock();
  struct stat st;
  if (!g || ::stat(fmt::format("/proc/{}/ns/pid", init).c_str(), &st) != 0)
    return;
  pid_ns_ = st.st_ino;
  std::lock_guard<std::mutex> guard{g->mtx_};
  g->sessions_[pid_ns_] = report_;
}

result<std::unique_ptr<read_guard::cover>>
read_guard::make_cover(const std::string& parent,
                       const std::vector<std::string>& deny,
                       std::function<void(denied_read)> report,
                       const std::vector<std::string>& keep) {
  std::unique_ptr<cover> c{new cover};
  c->guard_ = weak_from_this();
  c->report_
    = std::make_shared<std::function<void(denied_read)>>(std::move(report));
  size_t n = 0;
  for (auto& path : deny) {
    struct stat st;
    if (path.empty() || path[0] != '/' || ::stat(path.c_str(), &st) != 0
        || c->placeholders_.count(path) != 0 || c->mounts_.count(path) != 0)
      continue;
    bool dir = S_ISDIR(st.st_mode);
    if (dir && lookups_) {
      auto d = lookups_->make(path, keep, c->report_);
      if (!d)
        return d.error();
      c->served_.push_back(d->id);
      c->mounts_.emplace(path, d->mount.get());
      c->mount_fds_.push_back(std::move(d->mount));
      continue;
    }
    if (!dir) {
      auto ph = shared_file(parent, path);
      if (!ph)
        return ph.error();
      c->placeholders_.emplace(path, std::move(*ph));
      continue;
    }
    if (c->directory_.empty()) {
      auto made = make_placeholder_directory(parent, cover_prefix);
      if (!made)
        return made.error();
      c->directory_ = std::move(*made);
    }
    auto ph = fmt::format("{}/d{}", c->directory_, n++);
    struct stat pst;
    if (::mkdir(ph.c_str(), 0755) != 0 || ::stat(ph.c_str(), &pst) != 0)
      return error{errc::io_error,
                   fmt::format("cannot make {}: {}", ph, std::strerror(errno))};
    // Registered before it is marked: no open of it goes unexplained.
    {
      std::lock_guard<std::mutex> guard{mtx_};
      entries_[{pst.st_dev, pst.st_ino}] = entry{path, c->report_};
    }
    c->keys_.emplace_back(pst.st_dev, pst.st_ino);
    if (::fanotify_mark(group_, FAN_MARK_ADD, FAN_OPEN_PERM | FAN_ONDIR,
                        AT_FDCWD, ph.c_str())
        != 0)
      return error{errc::unsupported, fmt::format("fanotify_mark {}: {}", ph,
                                                  std::strerror(errno))};
    c->marked_.emplace_back(ph, true);
    c->placeholders_.emplace(path, std::move(ph));
  }
  return c;
}

read_guard::cover::~cover() {
  // The guard outlives its covers, as the runtime outlives its sessions.
  if (auto g = guard_.lock()) {
    g->forget(*this);
    for (auto id : served_)
      g->lookups_->close(id);
  }
  // Directories made inside a placeholder directory (mount points of what
  // stays reachable there) go with it.
  if (!directory_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(directory_, ec);
  }
}

} // namespace sandbox
