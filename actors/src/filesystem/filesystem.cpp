#include "filesystem/filesystem.hpp"

#include <type_traits>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/system_messages.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include <fmt/format.h>

#include "caf_error.hpp"
#include "filesystem/jobs.hpp"
#include "filesystem/streams.hpp"
#include "filesystem/worker.hpp"
#include "filesystem/writes.hpp"
#include "handed_out.hpp"
#include "sandbox/fs/file_io.hpp"
#include "sandbox/fs/listing.hpp"
#include "sandbox/fs/path_resolver.hpp"
#include "sandbox/fs/stat.hpp"
#include "sandbox/fs/view.hpp"

namespace sandbox::actors {

namespace filesystem {

result<std::string> absolute(self_ptr self, std::string_view op,
                             const std::string& path) {
  auto& st = self->state;
  if (st.stopped)
    return error{errc::session_stopped,
                 fmt::format("{} {}: the session is stopped", op, path)};
  if (auto ok = fs::validate_path(path); !ok)
    return error{ok.error().code,
                 fmt::format("{}: {}", op, ok.error().message)};
  return fs::resolve_keeping_slash(st.working_directory, path);
}

void report_if_refused(self_ptr self, const refusal& r) {
  if (!r || r->path.empty())
    return;
  auto kind = r->kind == fs::denial::write_denied ? violation_kind::write_denied
                                                  : violation_kind::read_denied;
  if (auto session = caf::actor_cast<session_actor_impl>(self->state.session))
    self->send(session, violations_atom_v,
               std::vector<violation>{violation{kind, 0, r->path}});
}

void maybe_quit(self_ptr self) {
  auto& st = self->state;
  if (st.stopped && !st.busy && st.jobs.empty() && st.streams == 0
      && handed_out(self))
    self->quit();
}

std::optional<std::string> to_std(const caf::optional<std::string>& x) {
  if (x)
    return *x;
  return std::nullopt;
}

namespace {

/// Runs the one-shot file operation `op` on the absolute form of `path` on
/// the file pool and makes its outcome the reply: the value (`ok` for an
/// operation that returns none), or the error of resolving `path` or of
/// `op` itself.
template <class F>
auto on_path(self_ptr self, std::string_view verb, const std::string& path,
             F op) {
  using value_type = typename std::decay_t<decltype(op(
    std::declval<const std::string&>(),
    std::declval<fs::denial*>()))>::value_type;
  using reply_type
    = std::conditional_t<std::is_void_v<value_type>, ok_atom, value_type>;
  auto abs = absolute(self, verb, path);
  if (!abs)
    return caf::result<reply_type>{to_caf(abs.error())};
  auto rp = self->make_response_promise<reply_type>();
  auto refused = std::make_shared<fs::denial>();
  offload(
    self, fmt::format("{} {}", verb, path),
    [op = std::move(op), abs = std::move(*abs), refused] {
      return op(abs, refused.get());
    },
    [self, rp, refused](auto outcome) mutable {
      report_if_refused(self, refused);
      if (!outcome)
        rp.deliver(to_caf(outcome.error()));
      else if constexpr (std::is_void_v<value_type>)
        rp.deliver(ok_atom_v);
      else
        rp.deliver(std::move(*outcome));
    });
  return caf::result<reply_type>{rp};
}

// -- one-shot operations ------------------------------------------------------

caf::result<std::string> on_read(self_ptr self, const std::string& path) {
  return on_path(self, "read", path,
                 [view = self->state.view](const std::string& abs,
                                           fs::denial* d) {
                   return view ? view->read_file(abs, d) : fs::read_file(abs);
                 });
}

caf::result<std::string> on_read_text(self_ptr self, const std::string& path,
                                      uint64_t start_line, uint64_t end_line) {
  return on_path(self, "read", path,
                 [start_line, end_line, view = self->state.view](
                   const std::string& abs, fs::denial* d) {
                   return view ? view->read_text(abs, start_line, end_line, d)
                               : fs::read_text(abs, start_line, end_line);
                 });
}

caf::result<ok_atom> on_write(self_ptr self, const std::string& path,
                              std::string& bytes, const write_options& opts) {
  return on_path(self, "write", path,
                 [bytes = std::move(bytes), v = to_std(opts.if_version),
                  view = self->state.view](const std::string& abs,
                                           fs::denial* d) {
                   return view ? view->write_file(abs, bytes, v, d)
                               : fs::write_file(abs, bytes, v);
                 });
}

caf::result<ok_atom> on_remove(self_ptr self, const std::string& path) {
  return on_path(
    self, "remove", path,
    [view = self->state.view](const std::string& abs, fs::denial* d) {
      return view ? view->remove_file(abs, d) : fs::remove_file(abs);
    });
}

caf::result<std::vector<fs::dir_entry>> on_list_files(self_ptr self,
                                                      const std::string& path) {
  return on_path(self, "list", path,
                 [view = self->state.view](const std::string& abs,
                                           fs::denial* d) {
                   return view ? view->list_files(abs, d) : fs::list_files(abs);
                 });
}

caf::result<fs::file_stat> on_stat(self_ptr self, const std::string& path) {
  return on_path(self, "stat", path,
                 [view = self->state.view](const std::string& abs,
                                           fs::denial* d) {
                   return view ? view->stat(abs, d) : fs::stat_path(abs);
                 });
}

// -- lifecycle ----------------------------------------------------------------

caf::result<ok_atom> on_stop(self_ptr self) {
  auto& st = self->state;
  st.stopped = true;
  // The view's root goes with the last job that holds it.
  st.view = nullptr;
  // Open writes end here: their temporary files go away (on the file
  // pool, after the job in flight), their targets stay as they were;
  // the answer comes once they are gone. Queued jobs are refused;
  // streams and listings end at their next ack.
  auto rp = self->make_response_promise<ok_atom>();
  release_writers(self, take_writes(self), [self, rp]() mutable {
    rp.deliver(ok_atom_v);
    maybe_quit(self);
  });
  return rp;
}

filesystem_actor_impl::behavior_type
filesystem_behavior(self_ptr self, runtime_ptr rt,
                    std::string working_directory,
                    std::shared_ptr<const fs::session_view> view,
                    caf::actor_addr session) {
  auto& st = self->state;
  st.rt = std::move(rt);
  st.session = std::move(session);
  st.working_directory = std::move(working_directory);
  st.view = std::move(view);
  if (st.view)
    st.ids = st.view->ids();
  self->set_down_handler(
    [self](caf::down_msg& msg) { on_owner_down(self, msg); });
  return {
    [self](read_atom, const std::string& path) { return on_read(self, path); },
    [self](read_text_atom, const std::string& path, uint64_t start_line,
           uint64_t end_line) {
      return on_read_text(self, path, start_line, end_line);
    },
    [self](read_stream_atom, const std::string& path, uint32_t chunk_size,
           byte_sink& sink) {
      return on_read_stream(self, path, chunk_size, sink);
    },
    [self](write_atom, const std::string& path, std::string& bytes,
           const write_options& opts) {
      return on_write(self, path, bytes, opts);
    },
    [self](open_write_atom, const std::string& path,
           const write_options& opts) {
      return on_open_write(self, path, opts);
    },
    [self](write_atom, uint64_t id, std::string& chunk) {
      return on_write_chunk(self, id, chunk);
    },
    [self](commit_atom, uint64_t id) { return on_commit(self, id); },
    [self](abort_atom, uint64_t id) { return on_abort(self, id); },
    [self](remove_atom, const std::string& path) {
      return on_remove(self, path);
    },
    [self](list_files_atom, const std::string& path) {
      return on_list_files(self, path);
    },
    [self](list_atom, const std::string& path, uint32_t max_depth,
           frame_sink& sink) { return on_list(self, path, max_depth, sink); },
    [self](stat_atom, const std::string& path) { return on_stat(self, path); },
    [self](stop_atom) { return on_stop(self); },
    [self](ended_atom, uint64_t id) { on_job_done(self, id); },
  };
}

} // namespace

} // namespace filesystem

filesystem_actor_impl
spawn_filesystem(caf::actor_system& sys, runtime_ptr rt,
                 std::string working_directory,
                 std::shared_ptr<const fs::session_view> view,
                 caf::actor_addr session) {
  return sys.spawn(filesystem::filesystem_behavior, std::move(rt),
                   std::move(working_directory), std::move(view),
                   std::move(session));
}

} // namespace sandbox::actors
