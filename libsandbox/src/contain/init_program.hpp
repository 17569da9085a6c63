#pragma once

// The PID 1 of contained sessions as bytes: the static program built from
// contain/init.c, embedded by contain/embed_init.cmake.

#include <cstddef>

namespace sandbox::detail {

/// The ELF file of the session init (x86_64, static, no libc).
extern const unsigned char init_program_bytes[];

/// Its size in bytes.
extern const std::size_t init_program_size;

} // namespace sandbox::detail
