#include "denied_directory.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "sandbox/reactor.hpp"

namespace sandbox {

namespace {

/// How long the kernel may keep a name or an attribute (the answers never
/// change while the session lives).
constexpr uint64_t forever = uint64_t{1} << 30;

/// `statx` (newer than these headers): answered "not implemented", so the
/// kernel falls back to `getattr` for good.
constexpr uint32_t fuse_statx = 52;

unique_fd open_fuse_device() {
  return unique_fd{::open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK)};
}

bool inside(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0
         && path[dir.size()] == '/';
}

void directory_attr(fuse_attr& a, uint64_t id) {
  a = fuse_attr{};
  a.ino = id;
  a.mode = S_IFDIR | 0755;
  a.nlink = 2;
  a.uid = ::geteuid();
  a.gid = ::getegid();
  a.blksize = 4096;
}

} // namespace

pid_t process_group_of(pid_t pid) {
  std::ifstream in{fmt::format("/proc/{}/stat", pid)};
  std::string line;
  if (!std::getline(in, line))
    return 0;
  // pid (comm) state ppid pgrp ...: comm may hold anything but ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos)
    return 0;
  std::string state;
  long ppid = 0;
  long pgrp = 0;
  std::istringstream rest{line.substr(close + 1)};
  if (!(rest >> state >> ppid >> pgrp))
    return 0;
  return static_cast<pid_t>(pgrp);
}

bool denied_directory::available() {
  static const bool ok = [] {
    auto dev = open_fuse_device();
    if (!dev)
      return false;
    unique_fd fs{::fsopen("fuse", FSOPEN_CLOEXEC)};
    return static_cast<bool>(fs);
  }();
  return ok;
}

denied_directory::denied_directory(reactor& r, int dev)
  : exec_(r.executor()), dev_(r.context(), dev), self_(::getpid()) {
}

result<std::shared_ptr<denied_directory>>
denied_directory::make(reactor& r, std::string path,
                       const std::vector<std::string>& keep,
                       std::shared_ptr<report_fn> report) {
  auto fail = [](const char* what) {
    return error{errc::unsupported,
                 fmt::format("{}: {}", what, std::strerror(errno))};
  };
  auto dev = open_fuse_device();
  if (!dev)
    return fail("open /dev/fuse");
  unique_fd fs{::fsopen("fuse", FSOPEN_CLOEXEC)};
  if (!fs)
    return fail("fsopen fuse");
  auto fd = std::to_string(dev.get());
  auto uid = std::to_string(::geteuid());
  auto gid = std::to_string(::getegid());
  if (::fsconfig(fs.get(), FSCONFIG_SET_STRING, "fd", fd.c_str(), 0) != 0
      || ::fsconfig(fs.get(), FSCONFIG_SET_STRING, "rootmode", "40755", 0) != 0
      || ::fsconfig(fs.get(), FSCONFIG_SET_STRING, "user_id", uid.c_str(), 0)
           != 0
      || ::fsconfig(fs.get(), FSCONFIG_SET_STRING, "group_id", gid.c_str(), 0)
           != 0
      || ::fsconfig(fs.get(), FSCONFIG_SET_FLAG, "allow_other", nullptr, 0) != 0
      || ::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    return fail("fsconfig fuse");
  unique_fd mnt{
    ::fsmount(fs.get(), FSMOUNT_CLOEXEC,
              MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)};
  if (!mnt)
    return fail("fsmount fuse");
  std::shared_ptr<denied_directory> d{new denied_directory(r, dev.release())};
  d->mount_ = std::move(mnt);
  d->path_ = std::move(path);
  d->report_ = std::move(report);
  d->nodes_.push_back(node{});
  for (auto& k : keep) {
    if (!inside(k, d->path_))
      continue;
    uint64_t at = 1;
    size_t from = d->path_.size() + 1;
    while (from <= k.size()) {
      auto end = std::min(k.find('/', from), k.size());
      auto name = k.substr(from, end - from);
      from = end + 1;
      if (name.empty())
        continue;
      auto& children = d->nodes_[at - 1].children;
      auto i = children.find(name);
      if (i == children.end()) {
        auto rel = d->nodes_[at - 1].path;
        rel += (rel.empty() ? "" : "/") + name;
        d->nodes_.push_back(node{std::move(rel), {}});
        i = d->nodes_[at - 1].children.emplace(name, d->nodes_.size()).first;
      }
      at = i->second;
    }
  }
  d->wait();
  return d;
}

void denied_directory::close() {
  auto done = [this] {
    boost::system::error_code ec;
    dev_.close(ec);
    mount_.reset();
  };
  if (exec_.running_in_this_thread()) {
    done();
    return;
  }
  // Waits for the hand-over: that thread never blocks (it reads, answers
  // and reports), and the descriptors are gone when the cover is, so a
  // session leaves none behind.
  std::promise<void> closed;
  boost::asio::post(exec_, [&, self = shared_from_this()] {
    done();
    closed.set_value();
  });
  closed.get_future().wait();
}

void denied_directory::wait() {
  dev_.async_wait(
    boost::asio::posix::stream_descriptor::wait_read,
    [self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || !self->dev_.is_open())
        return;
      self->drain();
      if (self->dev_.is_open())
        self->wait();
    });
}

void denied_directory::drain() {
  // A request is at most a header, a write's header and `max_write` (4096,
  // the minimum); the kernel wants room for 8 KiB at least.
  thread_local std::array<char, 3 * FUSE_MIN_READ_BUFFER> buf;
  for (;;) {
    auto n = ::read(dev_.native_handle(), buf.data(), buf.size());
    if (n < 0 && errno == ENOENT)
      continue; // a request interrupted before it was read
    if (n < 0 && errno == ENODEV) {
      boost::system::error_code ec;
      dev_.close(ec); // unmounted: the session's namespace is gone
      return;
    }
    if (n < static_cast<ssize_t>(sizeof(fuse_in_header)))
      return; // EAGAIN: nothing more queued
    answer(buf.data(), static_cast<size_t>(n));
  }
}

bool denied_directory::own(uint32_t pid) const {
  return pid != 0
         && ::syscall(SYS_tgkill, self_, static_cast<pid_t>(pid), 0) == 0;
}

void denied_directory::refuse(uint32_t pid, const std::string& relative) {
  auto path = relative.empty() ? path_ : path_ + "/" + relative;
  auto p = static_cast<pid_t>(pid);
  (*report_)(denied_read{p, process_group_of(p), std::move(path)});
}

void denied_directory::reply(uint64_t unique, int error, const void* data,
                             size_t size) {
  fuse_out_header h{};
  h.len = static_cast<uint32_t>(sizeof(h) + (error == 0 ? size : 0));
  h.error = error;
  h.unique = unique;
  iovec iov[2] = {{&h, sizeof(h)}, {const_cast<void*>(data), size}};
  // Fails only when the request was interrupted meanwhile (ENOENT) or the
  // connection ended: nothing waits for the answer then.
  (void) !::writev(dev_.native_handle(), iov, error == 0 && size > 0 ? 2 : 1);
}

void denied_directory::answer(const char* request, size_t size) {
  fuse_in_header h;
  std::memcpy(&h, request, sizeof(h));
  const char* arg = request + sizeof(h);
  size_t arg_size = size - sizeof(h);
  auto* n = h.nodeid >= 1 && h.nodeid <= nodes_.size() ? &nodes_[h.nodeid - 1]
                                                       : nullptr;
  switch (h.opcode) {
    case FUSE_INIT: {
      fuse_init_in in{};
      std::memcpy(&in, arg, std::min(arg_size, sizeof(in)));
      fuse_init_out out{};
      out.major = FUSE_KERNEL_VERSION;
      out.minor = std::min<uint32_t>(in.minor, FUSE_KERNEL_MINOR_VERSION);
      out.max_readahead = in.max_readahead;
      out.max_write = 4096;
      out.time_gran = 1;
      reply(h.unique, in.major == FUSE_KERNEL_VERSION ? 0 : -EPROTO, &out,
            sizeof(out));
      return;
    }
    case FUSE_LOOKUP: {
      if (n == nullptr || arg_size == 0) {
        reply(h.unique, -ENOENT);
        return;
      }
      std::string name{arg, strnlen(arg, arg_size)};
      auto i = n->children.find(name);
      if (i != n->children.end()) {
        fuse_entry_out e{};
        e.nodeid = i->second;
        e.generation = 1;
        e.entry_valid = forever;
        e.attr_valid = forever;
        directory_attr(e.attr, i->second);
        reply(h.unique, 0, &e, sizeof(e));
        return;
      }
      // The node's own lookups find an empty directory, as they would
      // below any cover; a command's is a refused read.
      if (own(h.pid)) {
        reply(h.unique, -ENOENT);
        return;
      }
      refuse(h.pid, n->path.empty() ? name : n->path + "/" + name);
      reply(h.unique, -EPERM);
      return;
    }
    case FUSE_GETATTR: {
      if (n == nullptr) {
        reply(h.unique, -ENOENT);
        return;
      }
      fuse_attr_out out{};
      out.attr_valid = forever;
      directory_attr(out.attr, h.nodeid);
      reply(h.unique, 0, &out, sizeof(out));
      return;
    }
    case FUSE_OPENDIR: {
      if (n == nullptr) {
        reply(h.unique, -ENOENT);
        return;
      }
      if (h.nodeid == FUSE_ROOT_ID && !own(h.pid)) {
        refuse(h.pid, {});
        reply(h.unique, -EPERM);
        return;
      }
      fuse_open_out out{};
      reply(h.unique, 0, &out, sizeof(out));
      return;
    }
    case FUSE_READDIR: {
      fuse_read_in in{};
      std::memcpy(&in, arg, std::min(arg_size, sizeof(in)));
      if (n == nullptr) {
        reply(h.unique, -ENOENT);
        return;
      }
      std::vector<std::pair<std::string, uint64_t>> entries{
        {".", h.nodeid}, {"..", FUSE_ROOT_ID}};
      for (auto& [name, id] : n->children)
        entries.emplace_back(name, id);
      std::string out;
      for (auto i = in.offset; i < entries.size(); ++i) {
        auto& [name, id] = entries[i];
        fuse_dirent d{};
        d.ino = id;
        d.off = i + 1;
        d.namelen = static_cast<uint32_t>(name.size());
        d.type = DT_DIR;
        auto at = out.size();
        auto step = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + name.size());
        if (at + step > in.size)
          break;
        out.resize(at + step, '\0');
        std::memcpy(out.data() + at, &d, FUSE_NAME_OFFSET);
        std::memcpy(out.data() + at + FUSE_NAME_OFFSET, name.data(),
                    name.size());
      }
      reply(h.unique, 0, out.data(), out.size());
      return;
    }
    case FUSE_RELEASEDIR:
    case FUSE_ACCESS:
    case FUSE_FLUSH:
      reply(h.unique, 0);
      return;
    case FUSE_STATFS: {
      fuse_statfs_out out{};
      out.st.bsize = 4096;
      out.st.frsize = 4096;
      out.st.namelen = 255;
      reply(h.unique, 0, &out, sizeof(out));
      return;
    }
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:
      return; // no answer expected
    case FUSE_GETXATTR:
    case FUSE_LISTXATTR:
    case fuse_statx:
      reply(h.unique, -ENOSYS); // the kernel stops asking
      return;
    default:
      // Everything that would change it: Landlock refuses a command's
      // writes here before they arrive, the node's are refused by name.
      reply(h.unique, -EPERM);
      return;
  }
}

} // namespace sandbox
