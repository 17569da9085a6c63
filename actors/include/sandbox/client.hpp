#pragma once

// Everything plain C++ code needs to use sandbox: a node in this process
// (`embedded_node`) or on another machine (`remote_node`, `node_pool`), and
// the blocking facade of its sessions and their files. Link
// `sandbox::actors` (docs/api.md).

#include "sandbox/actors/remote.hpp"
#include "sandbox/client/blocking_files.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
