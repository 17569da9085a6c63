# What makes a clean build short on a small machine (CONTRIBUTING.md,
# "Build time" has the measurements): precompiled headers and unity builds.
#
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

# Unity builds: the sources of a library compiled as one translation unit
# per folder, so that the CAF, Asio and JSON templates they share are
# instantiated, optimised and described in debug information once per
# folder rather than once per file (sandbox_actors: 353 CPU seconds in 28
# translation units, 204 in 7 with the precompiled header). The tests stay one translation unit per
# suite (CAF's test macros name their registrations by line number).
# A developer who rebuilds one file over and over may turn it off.
option(SANDBOX_UNITY_BUILD
       "Compile the libraries and the CLI as one translation unit per folder"
       ON)

# sandbox_unity(TARGET [SKIP folder...] [BATCH n]): one translation unit
# per folder of TARGET's sources, but those of the SKIP folders (compiled
# one by one); with BATCH, n sources per translation unit instead.
function(sandbox_unity target)
  if(NOT SANDBOX_UNITY_BUILD)
    return()
  endif()
  cmake_parse_arguments(arg "" "BATCH" "SKIP" ${ARGN})
  if(arg_BATCH)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                          UNITY_BUILD_BATCH_SIZE ${arg_BATCH})
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                        UNITY_BUILD_MODE GROUP)
  get_target_property(sources ${target} SOURCES)
  foreach(source ${sources})
    if(NOT source MATCHES "\\.(c|cpp)$")
      continue()
    endif()
    get_filename_component(folder ${source} DIRECTORY)
    get_filename_component(folder "${folder}" NAME)
    if(folder IN_LIST arg_SKIP)
      set_source_files_properties(${source} TARGET_DIRECTORY ${target}
        PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    else()
      set_source_files_properties(${source} TARGET_DIRECTORY ${target}
        PROPERTIES UNITY_GROUP "${folder}")
    endif()
  endforeach()
endfunction()
