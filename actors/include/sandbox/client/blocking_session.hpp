#pragma once

#include <signal.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <caf/fwd.hpp>

#include "sandbox/actors/node.hpp"
#include "sandbox/actors/protocol.hpp"

namespace sandbox::actors {

/// Called with each output chunk, in the caller's thread, as it arrives.
using chunk_callback = std::function<void(const output_chunk&)>;

/// A live process started by `blocking_session::spawn` (§10).
class blocking_process {
public:
  blocking_process(caf::actor_system& sys, process_actor handle, int32_t pid)
    : sys_(&sys), handle_(std::move(handle)), pid_(pid) {
  }
  int32_t pid() const noexcept {
    return pid_;
  }
  const process_actor& handle() const noexcept {
    return handle_;
  }
  result<void> write_stdin(std::string data);
  result<void> close_stdin();
  /// Signals the process group; default SIGTERM.
  result<void> kill(int32_t sig = SIGTERM);
  /// Waits for the exit; the result's exit code follows §6.
  result<exec_result> wait();

private:
  caf::actor_system* sys_;
  process_actor handle_;
  int32_t pid_;
};

/// The blocking facade of one session: the actor messages, called from
/// plain C++ (never a second implementation).
class blocking_session {
public:
  /// Creates a session on `node` (§18: directories, port lease, id).
  static result<blocking_session> create(basic_node& node,
                                         session_config cfg = {});

  /// Creates a session through any node actor (local or remote). On a
  /// remote node without `cfg.owner`, the owner is this actor system's
  /// `client_owner`: the session stops after the node's client grace
  /// period once this process is gone, unless `cfg.detached`.
  static result<blocking_session> create(caf::actor_system& sys,
                                         const node_actor& node,
                                         session_config cfg = {});

  blocking_session(caf::actor_system& sys, session_actor handle)
    : sys_(&sys), handle_(std::move(handle)) {
  }

  const session_actor& handle() const noexcept {
    return handle_;
  }

  result<exec_result> execute(const std::string& command,
                              const exec_options& opts = {});

  /// Runs `command`; `on_chunk` sees each chunk as it arrives (§1).
  result<exec_result> execute_streaming(const std::string& command,
                                        const exec_options& opts,
                                        const chunk_callback& on_chunk);

  result<exec_result> execute_code(const std::string& code,
                                   const std::string& language,
                                   const exec_options& opts = {},
                                   const chunk_callback& on_chunk = {});

  /// Runs code with the interpreter `language` (as `execute_code`) whose
  /// source is not in memory yet: `on_start` gets the live process once it
  /// runs, to feed its stdin (`write_stdin` waits until the pipe took the
  /// bytes, so a feeding thread gets back-pressure; then `close_stdin`);
  /// `on_chunk` sees the output in the calling thread until the result.
  result<exec_result>
  execute_code_streaming(const std::string& language, const exec_options& opts,
                         const std::function<void(blocking_process)>& on_start,
                         const chunk_callback& on_chunk);

  result<blocking_process> spawn(const std::string& command,
                                 const exec_options& opts = {});

  /// Long-lived processes (docs/processes.md), named by their id `p-N`.
  /// Starts `command`; returns at once.
  result<process_info> start_process(const std::string& command,
                                     const process_options& opts = {});
  /// Up to `max` bytes of its output from `offset`, waiting up to `wait`
  /// for a first byte while none is there and it runs.
  result<process_output>
  read_process(const std::string& id, uint64_t offset,
               std::chrono::milliseconds wait = std::chrono::milliseconds{0},
               uint64_t max = default_process_retain);
  result<void> write_process(const std::string& id, std::string data);
  result<void> close_process_stdin(const std::string& id);
  result<void> kill_process(const std::string& id, int32_t sig = SIGTERM);
  /// Sets the size of a process's terminal (`process_options::tty`).
  result<void> resize_process(const std::string& id, uint16_t rows,
                              uint16_t cols);
  /// Waits up to `wait` for it to end; its info either way.
  result<process_info> wait_process(const std::string& id,
                                    std::chrono::milliseconds wait);
  /// The session's processes, running and exited, in the order started.
  result<std::vector<process_info>> processes();

  /// Cancels the execution whose options carried `key`.
  result<bool> cancel(const std::string& key);

  result<stop_receipt> stop();

  result<session_info> info();

  /// What the session's executions and file operations were refused or
  /// hit (contained sessions), oldest first, each tagged with its
  /// execution; at most `max_session_violations`.
  result<std::vector<violation>> violations();

private:
  /// Once this facade stopped its session, a request that fails says
  /// `session_stopped`: a session whose handle went out over the network
  /// quits after its stop, so its requests fail as for a gone actor.
  template <class T>
  result<T> after_stop(result<T> r) const;

  caf::actor_system* sys_;
  session_actor handle_;
  /// The receipt of the stop made through this facade (see `after_stop`);
  /// shared by its copies.
  std::shared_ptr<std::optional<stop_receipt>> stopped_
    = std::make_shared<std::optional<stop_receipt>>();
};

/// Converts a CAF error into a domain error (code and message preserved).
sandbox::error from_caf(const caf::error& err);

} // namespace sandbox::actors
