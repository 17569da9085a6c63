#pragma once

// The library sandbox::publish: for programs that publish a node.

namespace sandbox::actors {

/// Gives the connections that the published nodes of this process accept
/// descriptor numbers that no recent connection had.
///
/// CAF 0.17.6's BASP broker knows a connection by its descriptor number
/// and forgets a closed one late; a new client that gets the number of a
/// connection closed a moment before loses its calls about 4 s later
/// (`node_unreachable`). A program that publishes a node to many clients
/// that come and go calls this once, before `publish_node`.
///
/// Defined in the static library sandbox::publish (CMake target
/// `sandbox::publish`), not in sandbox::actors: that library also defines
/// the process's `accept()`, which forwards to libc's and, once this was
/// called, moves a connection accepted on the listening socket of a
/// published node (found by its port, see `publish_node`) to a descriptor
/// in the upper half of RLIMIT_NOFILE (close-on-exec). Connections
/// accepted on any other socket keep the number and the flags the kernel
/// gave them. Calling this function is what links that `accept()` into the
/// program; a program that does not call it keeps libc's.
void renumber_node_connections();

} // namespace sandbox::actors
