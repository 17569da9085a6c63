#pragma once

// Shared fixture of the actors.filesystem* suites: a real node, one session
// and the blocking facade of its filesystem worker, plus helpers that set up
// files directly (not through the worker) and drive the worker's messages
// by hand where the facade would hide what a test looks at.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <caf/after.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "fixture.hpp"
#include "sandbox/client/blocking_files.hpp"

namespace sandbox::test {

/// Writes `bytes` to `path` directly, replacing it.
inline void put_file(const std::string& path, const std::string& bytes) {
  auto fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                   0644);
  if (fd < 0)
    throw std::runtime_error("cannot create " + path);
  auto n = ::write(fd, bytes.data(), bytes.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(bytes.size()))
    throw std::runtime_error("cannot write " + path);
}

/// Reads `path` directly; empty when it cannot be read.
inline std::string get_file(const std::string& path) {
  std::string out;
  auto fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return out;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

/// Names in `dir` that look like temporary files of an atomic write.
inline size_t temp_files_in(const std::string& dir) {
  size_t n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (auto* e = ::readdir(d))
      if (std::string{e->d_name}.find(".sandbox-tmp-") != std::string::npos)
        ++n;
    ::closedir(d);
  }
  return n;
}

/// Descriptors of this process open on anonymous temporary files (O_TMPFILE)
/// in `dir`: /proc shows them as "DIR/#INODE (deleted)".
inline size_t open_temp_files_in(const std::string& dir) {
  size_t n = 0;
  auto prefix = dir + "/#";
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (auto* e = ::readdir(d)) {
      char buf[4096];
      auto link = std::string{"/proc/self/fd/"} + e->d_name;
      auto len = ::readlink(link.c_str(), buf, sizeof(buf));
      if (len > 0
          && std::string(buf, static_cast<size_t>(len)).rfind(prefix, 0) == 0)
        ++n;
    }
    ::closedir(d);
  }
  return n;
}

/// Runs `f` with the effective user and group `nobody` in every thread of
/// the process (glibc applies seteuid to all threads, the worker's
/// included), so that root's permission bypass does not hide permission
/// errors. Without root, `f` simply runs.
template <class F>
auto as_nobody(F f) {
  struct restore {
    bool root = ::geteuid() == 0;
    restore() {
      if (root && (::setegid(65534) != 0 || ::seteuid(65534) != 0))
        throw std::runtime_error("cannot become nobody");
    }
    ~restore() {
      if (root && (::seteuid(0) != 0 || ::setegid(0) != 0))
        std::abort();
    }
  } guard;
  return f();
}

/// What an actor sees of one listing: its frames and its done frames.
struct raw_listing {
  std::vector<fs::frame> frames;
  std::vector<actors::list_done> dones;
  /// Batches that arrived after the first done (must be none).
  size_t late_batches = 0;
};

/// Lists `path` by sending the worker `list_atom` with a scoped actor as the
/// sink. With `cancel_at` > 0 the sink answers that batch (1-based) with an
/// error. After the done arrives, a later request to the worker (answered
/// in order after everything the listing sent) makes sure no frame or done
/// frame is still on its way.
inline raw_listing
list_raw(caf::actor_system& sys, const actors::filesystem_actor& worker,
         const std::string& path, uint32_t max_depth, size_t cancel_at = 0) {
  raw_listing out;
  caf::scoped_actor self{sys};
  auto me = caf::actor_cast<caf::actor>(self);
  auto sink = caf::actor_cast<actors::frame_sink>(self);
  sys.spawn([=](caf::event_based_actor* relay) {
    relay
      ->request(worker, caf::infinite, actors::list_atom_v, path, max_depth,
                sink)
      .then([=](actors::list_done& d) { relay->send(me, std::move(d)); },
            [=](caf::error& err) {
              relay->send(me, actors::list_done{0, std::move(err)});
            });
  });
  size_t batches = 0;
  auto on_batch
    = [&](actors::frames_atom,
          std::vector<fs::frame>& batch) -> caf::result<actors::ack_atom> {
    if (!out.dones.empty())
      ++out.late_batches;
    if (++batches == cancel_at)
      return caf::make_error(errc::aborted, "cancelled by the test");
    for (auto& f : batch)
      out.frames.push_back(std::move(f));
    return actors::ack_atom_v;
  };
  self->receive_while([&] {
    return out.dones.empty();
  })(on_batch, [&](actors::list_done& d) { out.dones.push_back(d); });
  self->request(worker, caf::infinite, actors::stat_atom_v, std::string{"/"})
    .receive([](fs::file_stat&) {}, [](caf::error&) {});
  bool more = true;
  self->receive_while([&] { return more; })(
    on_batch, [&](actors::list_done& d) { out.dones.push_back(d); },
    caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
  return out;
}

/// "ok" or the code name of a failed result, for readable checks.
template <class T>
std::string code(const result<T>& r) {
  return r ? std::string{"ok"} : std::string{to_string(r.error().code)};
}

/// The code of a sandbox error carried by `err` (none for no error).
inline errc code_of(const caf::error& err) {
  if (!err)
    return errc::none;
  return actors::from_caf(err).code;
}

/// A node, one session in `<tmp>/work` and its filesystem worker.
struct files_fixture : node_fixture {
  actors::blocking_session session;
  actors::blocking_files files;
  /// The session working directory.
  std::string wd;

  files_fixture()
    : session(make_session()),
      files(unwrap(actors::files_of(session))),
      wd(dir.path + "/work") {
  }

  caf::actor_system& sys() {
    return node.system();
  }

  /// `wd` + "/" + `rel`.
  std::string at(const std::string& rel) const {
    return wd + "/" + rel;
  }

  template <class T>
  static T unwrap(result<T> x) {
    if (!x)
      throw std::runtime_error(x.error().message);
    return std::move(*x);
  }
};

} // namespace sandbox::test
