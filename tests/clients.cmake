# clients.typescript: the TypeScript client (clients/typescript) built with
# its own pinned tools (`npm ci`, then `tsc`) in the build tree and tested
# against a `sandbox serve --http` node: the JSON API route by route, and
# NodeSandbox through the Strands Agents SDK.
set(ts_src ${PROJECT_SOURCE_DIR}/clients/typescript)
set(ts_dir ${CMAKE_CURRENT_BINARY_DIR}/ts-client)
if(SANDBOX_NODE AND SANDBOX_NPM)
  file(MAKE_DIRECTORY ${ts_dir})
  file(GLOB ts_sources CONFIGURE_DEPENDS ${ts_src}/src/*.ts ${ts_src}/test/*.mjs)
  set(ts_stamp ${ts_dir}/dist/.sandbox-built)
  add_custom_command(
    OUTPUT ${ts_stamp}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${ts_dir}
    COMMAND ${CMAKE_COMMAND} -E copy_directory ${ts_src}/src ${ts_dir}/src
    COMMAND ${CMAKE_COMMAND} -E copy_directory ${ts_src}/test ${ts_dir}/test
    COMMAND ${CMAKE_COMMAND} -E copy ${ts_src}/package.json
            ${ts_src}/package-lock.json ${ts_src}/tsconfig.json ${ts_dir}
    COMMAND ${SANDBOX_NPM} ci --no-audit --no-fund --loglevel=error
    COMMAND ${SANDBOX_NPM} run --silent build
    COMMAND ${CMAKE_COMMAND} -E touch ${ts_stamp}
    DEPENDS ${ts_sources} ${ts_src}/package.json ${ts_src}/package-lock.json
            ${ts_src}/tsconfig.json
    WORKING_DIRECTORY ${ts_dir}
    COMMENT "Building the TypeScript client (npm ci, tsc)"
    VERBATIM)
  add_custom_target(sandbox-ts-client DEPENDS ${ts_stamp})
  add_dependencies(sandbox_tests sandbox-ts-client)
  add_test(NAME clients.typescript
           COMMAND ${SANDBOX_NODE} ${ts_dir}/test/with-node.mjs
                   $<TARGET_FILE:sandbox_cli>
           WORKING_DIRECTORY ${ts_dir})
  set_tests_properties(clients.typescript PROPERTIES TIMEOUT 300)
endif()
