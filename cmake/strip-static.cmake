# CPack pre-build script (cmake/install.cmake): the static libraries in the
# package without their debug information. CPACK_STRIP_FILES strips the
# CLI but leaves archives alone; --strip-debug keeps their symbol tables.
set(staging "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
if(NOT staging OR NOT IS_DIRECTORY "${staging}")
  message(FATAL_ERROR "strip-static: no staging directory ('${staging}')")
endif()
file(GLOB_RECURSE archives "${staging}/*.a")
foreach(archive IN LISTS archives)
  execute_process(COMMAND "${CPACK_SANDBOX_STRIP}" --strip-debug "${archive}"
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "strip-static: ${CPACK_SANDBOX_STRIP} failed on "
                        "${archive}")
  endif()
endforeach()
