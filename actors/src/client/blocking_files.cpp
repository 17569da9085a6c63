#include "sandbox/client/blocking_files.hpp"

#include <utility>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include <fmt/format.h>

#include "client/blocking_ask.hpp"
#include "client/host_thread.hpp"
#include "sandbox/client/blocking_session.hpp"

namespace sandbox::actors {

namespace {

using detail::ask;
using detail::ask_ack;
using detail::ask_as;
using detail::ask_map;
using detail::ask_ok;
using detail::ask_stream;

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
    finished_(std::exchange(other.finished_, true)),
    failure_(std::move(other.failure_)) {
}

blocking_writer& blocking_writer::operator=(blocking_writer&& other) noexcept {
  if (this != &other) {
    abort();
    self_ = std::move(other.self_);
    handle_ = std::move(other.handle_);
    id_ = other.id_;
    bytes_ = other.bytes_;
    finished_ = std::exchange(other.finished_, true);
    failure_ = std::move(other.failure_);
  }
  return *this;
}

blocking_writer::~blocking_writer() {
  abort();
}

sandbox::error blocking_writer::finished_error() const {
  if (failure_)
    return sandbox::error{failure_->code,
                          fmt::format("write #{}: an earlier write failed: {}",
                                      id_, failure_->message)};
  return sandbox::error{errc::invalid_argument,
                        fmt::format("write #{}: already finished", id_)};
}

result<void> blocking_writer::write(std::string chunk) {
  if (finished_)
    return finished_error();
  auto n = chunk.size();
  auto out = ask_ack<ack_atom>(*self_, handle_, write_atom_v, id_,
                               std::move(chunk));
  if (out) {
    bytes_ += n;
  } else {
    abort();
    failure_ = out.error();
  }
  return out;
}

result<void> blocking_writer::commit() {
  if (finished_)
    return finished_error();
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
  auto on_item = [&](chunk_atom, std::string& chunk) -> caf::result<ack_atom> {
    if (on_chunk && !on_chunk(chunk))
      return caf::make_error(
        errc::aborted, fmt::format("read {}: cancelled by the caller", path));
    return ack_atom_v;
  };
  return ask_stream<byte_sink, uint64_t>(*sys_, handle_, on_item,
                                         read_stream_atom_v, path, chunk_size);
}

result<void> blocking_files::write_file(const std::string& path,
                                        std::string bytes,
                                        std::optional<std::string> if_version) {
  return ask_ok(*sys_, handle_, write_atom_v, path, std::move(bytes),
                make_options(std::move(if_version)));
}

result<blocking_writer>
blocking_files::open_write(const std::string& path,
                           std::optional<std::string> if_version) {
  detail::caf_logger_scope keep;
  auto self = std::make_unique<caf::scoped_actor>(*sys_);
  auto id = ask_as<uint64_t>(*self, handle_, open_write_atom_v, path,
                             make_options(std::move(if_version)));
  if (!id)
    return id.error();
  return blocking_writer{std::move(self), handle_, *id};
}

result<void> blocking_files::abort_write(uint64_t id) {
  return ask_ok(*sys_, handle_, abort_atom_v, id);
}

result<void> blocking_files::remove_file(const std::string& path) {
  return ask_ok(*sys_, handle_, remove_atom_v, path);
}

result<std::vector<fs::dir_entry>>
blocking_files::list_files(const std::string& path) {
  return ask<std::vector<fs::dir_entry>>(*sys_, handle_, list_files_atom_v,
                                         path);
}

list_summary blocking_files::list(const std::string& path, uint32_t max_depth,
                                  const frame_callback& on_frame) {
  auto on_item = [&](frames_atom,
                     std::vector<fs::frame>& batch) -> caf::result<ack_atom> {
    if (on_frame)
      for (auto& f : batch)
        if (!on_frame(f))
          return caf::make_error(errc::aborted,
                                 fmt::format("list {}: cancelled by the "
                                             "caller",
                                             path));
    return ack_atom_v;
  };
  auto done = ask_stream<frame_sink, list_done>(*sys_, handle_, on_item,
                                                list_atom_v, path, max_depth);
  list_summary out;
  if (!done) {
    // The worker is gone (e.g. a remote node went away): still one done.
    out.error = done.error();
    return out;
  }
  out.count = done->count;
  if (done->error)
    out.error = from_caf(done->error);
  return out;
}

result<fs::file_stat> blocking_files::stat(const std::string& path) {
  return ask<fs::file_stat>(*sys_, handle_, stat_atom_v, path);
}

result<blocking_files> files_of(blocking_session& session) {
  auto& sys = session.handle().home_system();
  return ask_map<blocking_files>(
    sys, session.handle(),
    [&](filesystem_actor& h) {
      return blocking_files{sys, std::move(h)};
    },
    files_atom_v);
}

} // namespace sandbox::actors
