# Install rules, the CMake package `sandbox`, sandbox.pc and the Debian
# package (CPack). Included by the top-level CMakeLists.txt when
# SANDBOX_INSTALL is on (the default when sandbox is the top-level project).
#
# Components: Runtime (the CLI and its man page) and Development (the
# libraries, their headers, the CMake package and sandbox.pc).
include(CMakePackageConfigHelpers)

set(SANDBOX_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sandbox)

# The libraries, exported as sandbox::core, sandbox::actors and
# sandbox::publish (the same names as the ALIAS targets of a build that
# includes this project).
install(TARGETS sandbox sandbox_actors sandbox_publish
  EXPORT sandboxTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime
          NAMELINK_COMPONENT Development
  # The public headers only (the targets' FILE_SET HEADERS); the private
  # ones of the machinery stay in the source tree.
  FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
                   COMPONENT Development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT sandboxTargets
  NAMESPACE sandbox::
  DESTINATION ${SANDBOX_CMAKE_INSTALL_DIR} COMPONENT Development)

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/sandboxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/sandboxConfig.cmake
  INSTALL_DESTINATION ${SANDBOX_CMAKE_INSTALL_DIR})
# 0.x: a new minor version may break the API.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/sandboxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sandboxConfig.cmake
              ${PROJECT_BINARY_DIR}/sandboxConfigVersion.cmake
              # Debian's libcaf-dev ships no CMake package: the find module
              # travels with ours.
              ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake
  DESTINATION ${SANDBOX_CMAKE_INSTALL_DIR} COMPONENT Development)

# pkg-config: relocatable (paths relative to the .pc file's directory).
file(RELATIVE_PATH SANDBOX_PC_PREFIX
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" SANDBOX_PC_PREFIX "${SANDBOX_PC_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/sandbox.pc.in
               ${PROJECT_BINARY_DIR}/sandbox.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/sandbox.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT Development)

# The CLI and its man page.
install(TARGETS sandbox_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
                                    COMPONENT Runtime)
if(SANDBOX_MAN_PAGE)
  install(FILES ${SANDBOX_MAN_PAGE}
    DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT Runtime)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/README.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT Runtime)

# The Debian package (`make package`): one .deb with all of the above,
# installed under /usr.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sandbox)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the sandbox authors")
set(CPACK_PACKAGE_CONTACT "the sandbox authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "execution service for AI agents (CLI, MCP server, C++ libraries)")
set(CPACK_PACKAGE_DESCRIPTION
    "Sessions in which agents run shell commands and code with streamed \
output, read and write files and lease a port; nothing a session starts \
outlives it. The sandbox CLI (with the MCP server `sandbox mcp` and the \
node `sandbox serve`), and the C++ libraries sandbox::core and \
sandbox::actors with their headers, CMake package and pkg-config file.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_SANDBOX_STRIP ${CMAKE_STRIP})
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/strip-static.cmake)
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# The runtime dependencies are read from the binaries (dpkg-shlibdeps, in
# dpkg-dev). Building against the libraries takes the -dev packages of
# their public dependencies: recommended, not required by the CLI.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "libcaf-dev (>= 0.17.6), libboost1.81-dev | libboost-dev (>= \
${SANDBOX_BOOST_MIN_VERSION}), libspdlog-dev, libfmt-dev, nlohmann-json3-dev, \
libssl-dev, libseccomp-dev, libfuse3-dev, pkg-config")
include(CPack)
