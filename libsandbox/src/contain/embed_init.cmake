# Writes the session init built from init.c (INPUT) as a C++ array into
# OUTPUT (cmake -DINPUT=... -DOUTPUT=... -P embed_init.cmake), for
# init_program.hpp.
file(READ "${INPUT}" hex HEX)
if(hex STREQUAL "")
  message(FATAL_ERROR "embed_init: ${INPUT} is empty")
endif()
# Sixteen bytes a line.
set(bytes "")
string(LENGTH "${hex}" length)
foreach(at RANGE 0 ${length} 32)
  string(SUBSTRING "${hex}" ${at} 32 line)
  if(NOT line STREQUAL "")
    string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1, " line "${line}")
    string(STRIP "${line}" line)
    string(APPEND bytes "  ${line}\n")
  endif()
endforeach()
file(WRITE "${OUTPUT}.tmp"
"// Generated from libsandbox/src/contain/init.c by embed_init.cmake.
#include \"contain/init_program.hpp\"

namespace sandbox::detail {

const unsigned char init_program_bytes[] = {
${bytes}};

const std::size_t init_program_size = sizeof(init_program_bytes);

} // namespace sandbox::detail
")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
