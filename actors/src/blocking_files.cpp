#include "sandbox/actors/blocking_files.hpp"

#include <utility>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include <fmt/format.h>

#include "blocking_ask.hpp"
#include "sandbox/actors/blocking_session.hpp"

namespace sandbox::actors {

namespace {

using detail::ask;
using detail::ask_ack;
using detail::ask_as;
using detail::relay_request;

write_options make_options(std::optional<std::string> if_version) {
  write_options opts;
  if (if_version)
    opts.if_version = std::move(*if_version);
  return opts;
}

} // namespace

// -- blocking_writer ----------------------------------------------------------

blocking_writer::blocking_writer(std::unique_ptr<caf::scoped_actor> self,
                                 filesystem_actor handle, uint64_t id)
  : self_(std::move(self)),
    handle_(std::move(handle)),
    id_(id),
    finished_(false) {
}

blocking_writer::blocking_writer(blocking_writer&& other) noexcept
  : self_(std::move(other.self_)),
    handle_(std::move(other.handle_)),
    id_(other.id_),
    bytes_(other.bytes_),
    finished_(std::exchange(other.finished_, true)) {
}

blocking_writer& blocking_writer::operator=(blocking_writer&& other) noexcept {
  if (this != &other) {
    abort();
    self_ = std::move(other.self_);
    handle_ = std::move(other.handle_);
    id_ = other.id_;
    bytes_ = other.bytes_;
    finished_ = std::exchange(other.finished_, true);
  }
  return *this;
}

blocking_writer::~blocking_writer() {
  abort();
}

result<void> blocking_writer::write(std::string chunk) {
  if (finished_)
    return sandbox::error{errc::invalid_argument,
                          fmt::format("write #{}: already finished", id_)};
  auto n = chunk.size();
  auto out = ask_ack<ack_atom>(*self_, handle_, write_atom_v, id_,
                               std::move(chunk));
  if (out)
    bytes_ += n;
  else
    abort();
  return out;
}

result<void> blocking_writer::commit() {
  if (finished_)
    return sandbox::error{errc::invalid_argument,
                          fmt::format("write #{}: already finished", id_)};
  finished_ = true;
  return ask_ack<ok_atom>(*self_, handle_, commit_atom_v, id_);
}

void blocking_writer::abort() noexcept {
  if (finished_)
    return;
  finished_ = true;
  // Best effort: if the worker is gone, so is the write.
  (void) ask_ack<ok_atom>(*self_, handle_, abort_atom_v, id_);
}

// -- blocking_files -----------------------------------------------------------

result<std::string> blocking_files::read_file(const std::string& path) {
  return ask<std::string>(*sys_, handle_, read_atom_v, path);
}

result<std::string> blocking_files::read_text(const std::string& path,
                                              uint64_t start_line,
                                              uint64_t end_line) {
  return ask<std::string>(*sys_, handle_, read_text_atom_v, path, start_line,
                          end_line);
}

result<uint64_t> blocking_files::read_stream(const std::string& path,
                                             const byte_callback& on_chunk,
                                             uint32_t chunk_size) {
  caf::scoped_actor self{*sys_};
  relay_request<uint64_t>(*sys_, self, handle_, read_stream_atom_v, path,
                          chunk_size, caf::actor_cast<byte_sink>(self));
  result<uint64_t> out = sandbox::error{errc::aborted, "no answer"};
  bool done = false;
  self->receive_while([&] { return !done; })(
    [&](chunk_atom, std::string& chunk) -> caf::result<ack_atom> {
      if (on_chunk && !on_chunk(chunk))
        return caf::make_error(errc::aborted,
                               fmt::format("read {}: cancelled by the caller",
                                           path));
      return ack_atom_v;
    },
    [&](uint64_t total) {
      out = total;
      done = true;
    },
    [&](caf::error& err) {
      out = from_caf(err);
      done = true;
    });
  return out;
}

result<void> blocking_files::write_file(const std::string& path,
                                        std::string bytes,
                                        std::optional<std::string> if_version) {
  caf::scoped_actor self{*sys_};
  return ask_ack<ok_atom>(self, handle_, write_atom_v, path, std::move(bytes),
                          make_options(std::move(if_version)));
}

result<blocking_writer>
blocking_files::open_write(const std::string& path,
                           std::optional<std::string> if_version) {
  auto self = std::make_unique<caf::scoped_actor>(*sys_);
  auto id = ask_as<uint64_t>(*self, handle_, open_write_atom_v, path,
                             make_options(std::move(if_version)));
  if (!id)
    return id.error();
  return blocking_writer{std::move(self), handle_, *id};
}

result<void> blocking_files::abort_write(uint64_t id) {
  caf::scoped_actor self{*sys_};
  return ask_ack<ok_atom>(self, handle_, abort_atom_v, id);
}

result<void> blocking_files::remove_file(const std::string& path) {
  caf::scoped_actor self{*sys_};
  return ask_ack<ok_atom>(self, handle_, remove_atom_v, path);
}

result<std::vector<fs::dir_entry>>
blocking_files::list_files(const std::string& path) {
  return ask<std::vector<fs::dir_entry>>(*sys_, handle_, list_files_atom_v,
                                         path);
}

list_summary blocking_files::list(const std::string& path, uint32_t max_depth,
                                  const frame_callback& on_frame) {
  caf::scoped_actor self{*sys_};
  relay_request<list_done>(*sys_, self, handle_, list_atom_v, path, max_depth,
                           caf::actor_cast<frame_sink>(self));
  list_summary out;
  bool done = false;
  self->receive_while([&] { return !done; })(
    [&](frames_atom, std::vector<fs::frame>& batch) -> caf::result<ack_atom> {
      if (on_frame)
        for (auto& f : batch)
          if (!on_frame(f))
            return caf::make_error(errc::aborted,
                                   fmt::format("list {}: cancelled by the "
                                               "caller",
                                               path));
      return ack_atom_v;
    },
    [&](list_done& d) {
      out.count = d.count;
      if (d.error)
        out.error = from_caf(d.error);
      done = true;
    },
    [&](caf::error& err) {
      // The worker is gone (e.g. a remote node went away): still one done.
      out.error = from_caf(err);
      done = true;
    });
  return out;
}

result<fs::file_stat> blocking_files::stat(const std::string& path) {
  return ask<fs::file_stat>(*sys_, handle_, stat_atom_v, path);
}

result<blocking_files> files_of(blocking_session& session) {
  auto& sys = session.handle().home_system();
  caf::scoped_actor self{sys};
  result<blocking_files> out = sandbox::error{errc::aborted, "no answer"};
  self->request(session.handle(), caf::infinite, files_atom_v)
    .receive(
      [&](filesystem_actor& h) { out = blocking_files{sys, std::move(h)}; },
      [&](caf::error& err) { out = from_caf(err); });
  return out;
}

} // namespace sandbox::actors
