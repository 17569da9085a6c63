#pragma once

// The Landlock ruleset of a contained session's commands (docs/security.md,
// "Landlock").

#include <sys/types.h>

#include <string>

#include "sandbox/contain/contained_session.hpp"
#include "sandbox/unique_fd.hpp"

namespace sandbox::detail {

/// The ruleset every command of the session whose init is `init` restricts
/// itself with (Landlock ABI `abi`), its paths resolved in the init's root:
/// reads the whole system, writes the working directory, the home, the
/// private /tmp and /dev/shm and the harmless devices. Errors:
/// `unsupported` when Landlock refuses the ruleset, `io_error` naming a
/// path that cannot be opened.
result<unique_fd> make_ruleset(pid_t init, const containment_spec& spec,
                               int abi);

/// The host's Landlock ABI version; 0 when it has none (`detail` then says
/// why).
int probe_landlock(std::string& detail);

} // namespace sandbox::detail
