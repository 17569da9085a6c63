#pragma once

#include <caf/actor_system_config.hpp>

namespace sandbox::actors {

/// Registers every sandbox message type, typed handle and the error
/// category "sandbox" (with its renderer) with `cfg`. Call before the actor
/// system is created.
void register_types(caf::actor_system_config& cfg);

/// An actor system config with sandbox's types already registered.
class system_config : public caf::actor_system_config {
public:
  system_config();
};

/// Returns the people-facing message of `err` (its context string for
/// sandbox errors, CAF's rendering otherwise).
std::string error_message(const caf::error& err);

/// Returns the snake_case code of `err` for sandbox errors ("path_not_found"),
/// or "io_error" for errors of other categories.
std::string error_code_name(const caf::error& err);

} // namespace sandbox::actors
