# mcp.e2e: `sandbox mcp` driven over stdio by the official TypeScript MCP
# SDK client (tests/mcp/client). The client's packages, pinned by its
# package-lock.json, are installed into the build tree with `npm ci`, again
# only when package.json or package-lock.json changed.
find_program(SANDBOX_NODE node)
find_program(SANDBOX_NPM npm)
set(mcp_client_src ${CMAKE_CURRENT_SOURCE_DIR}/mcp/client)
set(mcp_client_dir ${CMAKE_CURRENT_BINARY_DIR}/mcp-client)
if(SANDBOX_NODE AND SANDBOX_NPM)
  file(MAKE_DIRECTORY ${mcp_client_dir})
  # Next to its node_modules, so that its imports resolve there.
  configure_file(${mcp_client_src}/e2e.mjs ${mcp_client_dir}/e2e.mjs COPYONLY)
  configure_file(${mcp_client_src}/e2e-http.mjs ${mcp_client_dir}/e2e-http.mjs
                 COPYONLY)
  configure_file(${mcp_client_src}/conformance.mjs
                 ${mcp_client_dir}/conformance.mjs COPYONLY)
  configure_file(${mcp_client_src}/conformance-baseline.yaml
                 ${mcp_client_dir}/conformance-baseline.yaml COPYONLY)
  set(stamp ${mcp_client_dir}/node_modules/.sandbox-installed)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -E copy ${mcp_client_src}/package.json
            ${mcp_client_src}/package-lock.json ${mcp_client_dir}
    COMMAND ${SANDBOX_NPM} ci --no-audit --no-fund --loglevel=error
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${mcp_client_src}/package.json ${mcp_client_src}/package-lock.json
    WORKING_DIRECTORY ${mcp_client_dir}
    COMMENT "Installing the MCP SDK client of mcp.e2e (npm ci)"
    VERBATIM)
  # Part of `sandbox_tests` (`make test`), not of the default target: `make
  # build` and `make demo` need no npm registry.
  add_custom_target(sandbox-mcp-client DEPENDS ${stamp})
  add_dependencies(sandbox_tests sandbox-mcp-client)
  add_test(NAME mcp.e2e
           COMMAND ${SANDBOX_NODE} ${mcp_client_dir}/e2e.mjs
                   $<TARGET_FILE:sandbox_cli>
           WORKING_DIRECTORY ${mcp_client_dir})
  # The same SDK over HTTP: `sandbox serve --http`'s /mcp.
  add_test(NAME mcp.e2e_http
           COMMAND ${SANDBOX_NODE} ${mcp_client_dir}/e2e-http.mjs
                   $<TARGET_FILE:sandbox_cli>
           WORKING_DIRECTORY ${mcp_client_dir})
  # The official conformance suite against both transports; 0.1.13 is its
  # last release that runs on Node 20 (later ones need Node 22).
  add_test(NAME mcp.conformance
           COMMAND ${SANDBOX_NODE} ${mcp_client_dir}/conformance.mjs
                   $<TARGET_FILE:sandbox_cli>
           WORKING_DIRECTORY ${mcp_client_dir})
else()
  add_test(NAME mcp.e2e
           COMMAND sh -c "echo 'mcp.e2e: node and npm are missing; \
scripts/install-deps installs them' >&2; exit 1")
endif()
set_tests_properties(mcp.e2e PROPERTIES TIMEOUT 120)
if(TARGET sandbox-mcp-client)
  set_tests_properties(mcp.e2e_http PROPERTIES TIMEOUT 120)
  set_tests_properties(mcp.conformance PROPERTIES TIMEOUT 300)
endif()
