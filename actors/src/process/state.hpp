#pragma once

// The state of a spawned process's actor: its one execution
// (execution.hpp) and what its handles asked of it.

#include "process/execution.hpp"
#include "process/process.hpp"

#include <map>
#include <optional>
#include <vector>

#include <caf/typed_response_promise.hpp>

namespace sandbox::actors {

/// State of one spawned process's actor; owned by the actor alone. The
/// child's reactor callbacks never touch it: they only send messages.
/// Whatever ends the actor ends its child too (the execution's destructor,
/// which CAF runs when the actor ends, on its own thread).
struct process_state : process_execution {
  static inline const char* name = "sandbox.process";

  /// Ids of stdin writes.
  uint64_t next_write = 0;
  /// The result, once out: later `wait`s get it.
  std::optional<exec_result> result;
  std::vector<caf::typed_response_promise<exec_result>> waiters;
  std::map<uint64_t, caf::typed_response_promise<ok_atom>> writes;

  process_state() = default;
  process_state(const process_state&) = delete;
  process_state& operator=(const process_state&) = delete;
};

} // namespace sandbox::actors
