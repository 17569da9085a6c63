#pragma once

// The actor that streams what a node sends into a chunked HTTP response
// (private): an execution's chunks as NDJSON lines, a file's bytes, a
// listing's frames. Each piece is acked once the client's connection took
// it: the node's back-pressure reaches the client, and memory holds about
// one piece per response.

#include <chrono>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "exchange.hpp"

namespace sandbox::http {

/// Spawns a sink that answers `ex` with status 200 and `content_type`
/// (and `extra` fields) at its first piece or at its end. It takes
/// `(chunk_atom, output_chunk)` (an NDJSON chunk line), `(chunk_atom,
/// std::string)` (bytes as they are) and `(frames_atom,
/// std::vector<fs::frame>)` (NDJSON entry lines), each answered with
/// `ack_atom` once written; then one of
/// - `(end_atom, std::string tail)`: writes `tail` and ends the response;
/// - `(end_atom, std::string code, std::string message)`: before the
///   response started, the error with its status; after, an NDJSON error
///   line (`application/x-ndjson`) or a cut connection (other types: the
///   client sees an incomplete body, never a short one that looks whole).
/// Either end makes the sink quit. An NDJSON answer silent for
/// `heartbeat` says `{"type":"heartbeat"}` (and so starts, with 200).
caf::actor spawn_sink(caf::actor_system& sys, exchange_ptr ex,
                      std::string content_type,
                      std::chrono::milliseconds heartbeat, fields extra = {});

/// Sends the end of `sink` with `err` (see `spawn_sink`).
void end_sink(const caf::actor& sink, const sandbox::error& err);

} // namespace sandbox::http
