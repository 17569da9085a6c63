#pragma once

// What a call of the library leaves on a host's thread (private header of
// actors/src/client/).

#include <caf/logger.hpp>

namespace sandbox::actors::detail {

/// Keeps the calling thread's reference to a CAF logger as it was. CAF 0.17
/// leaves a reference to an actor system's logger in the storage of every
/// thread that makes an actor or an actor system there, and the system's
/// destructor waits until every such reference is gone: a host's thread
/// that once called the facade and outlives the node would hold the
/// node's destruction until that thread exits. Made before such a step on
/// a host's thread, this drops the reference again when the thread had
/// none (CAF's own log lines of that thread are lost; the node logs
/// through spdlog), and leaves a host that uses CAF's logger itself as
/// CAF would.
class caf_logger_scope {
public:
  caf_logger_scope() noexcept : had_(caf::logger::current_logger() != nullptr) {
  }

  ~caf_logger_scope() {
    if (!had_)
      caf::logger::set_current_actor_system(nullptr);
  }

  caf_logger_scope(const caf_logger_scope&) = delete;
  caf_logger_scope& operator=(const caf_logger_scope&) = delete;

private:
  bool had_;
};

} // namespace sandbox::actors::detail
