# Precompiled headers for the targets whose sources include CAF, Asio and
# nlohmann-json: every translation unit of them otherwise parses about
# 190,000 lines of those headers before its own code. CONTRIBUTING.md
# ("Build") has the clean build measured with and without them.
#
# Only third-party and standard headers go in: a header of ours in the
# precompiled set would hide a missing include (headers.self_contained
# checks the public ones without them), and the CAF test framework stays out
# because its header reads CAF_SUITE, which each suite defines first.
option(SANDBOX_PRECOMPILE_HEADERS
       "Precompile the CAF, Asio and JSON headers of the larger targets" ON)

set(SANDBOX_PCH_COMMON
  <algorithm> <atomic> <chrono> <cstdint> <cstring> <functional> <map>
  <memory> <mutex> <optional> <string> <string_view> <thread> <utility>
  <vector>
  <fmt/format.h> <spdlog/spdlog.h>)

set(SANDBOX_PCH_ACTORS
  ${SANDBOX_PCH_COMMON}
  <boost/asio/io_context.hpp> <boost/asio/post.hpp>
  <boost/asio/steady_timer.hpp> <boost/asio/strand.hpp>
  <caf/actor_system.hpp> <caf/actor_system_config.hpp>
  <caf/event_based_actor.hpp> <caf/scoped_actor.hpp> <caf/send.hpp>
  <caf/typed_actor.hpp> <caf/typed_event_based_actor.hpp>
  <caf/typed_response_promise.hpp>
  <nlohmann/json.hpp>)

# sandbox_precompile(TARGET core|actors): the set for a target that uses
# libsandbox only (`core`) or the actors too (`actors`).
function(sandbox_precompile target set)
  if(NOT SANDBOX_PRECOMPILE_HEADERS)
    return()
  endif()
  if(set STREQUAL "actors")
    target_precompile_headers(${target} PRIVATE ${SANDBOX_PCH_ACTORS})
  else()
    target_precompile_headers(${target} PRIVATE ${SANDBOX_PCH_COMMON})
  endif()
endfunction()
