#pragma once

// The JSON objects the CLI prints with --json and the HTTP API answers
// with (docs/cli.md, docs/http.md). Every object has `type` first. Bytes
// that are valid UTF-8 travel as text; other bytes as base64 beside it.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sandbox/actors/protocol.hpp"
#include "sandbox/errc.hpp"

namespace sandbox::wire {

using json = nlohmann::ordered_json;

/// Whether `bytes` is valid UTF-8 (no overlong forms, no surrogates).
bool is_utf8(std::string_view bytes);

/// Encodes bytes as base64 (RFC 4648, with padding).
std::string base64(std::string_view bytes);

/// Decodes base64 (RFC 4648, with padding); false for anything else.
bool from_base64(std::string_view text, std::string& out);

/// Sets `key` (valid UTF-8) or `<key>_b64` (anything else) to `bytes`.
void put_bytes(json& j, std::string_view bytes,
               const std::string& key = "data");

/// Sets `key` to `path`; a path that is not valid UTF-8 gets a display form
/// (invalid bytes as U+FFFD) there and its exact bytes as base64 in
/// `<key>_b64`.
void put_path(json& j, const std::string& key, const std::string& path);

/// One object as a line (no trailing newline); invalid UTF-8 in a string
/// becomes U+FFFD (callers carry such bytes as base64 beside it).
std::string line(const json& j);

/// `{"type":"error","code":C,"message":M}`.
json error_json(std::string_view code, std::string_view message);
json error_json(const sandbox::error& err);

/// A session (`session info`, `POST /v1/sessions`).
json session_json(const actors::session_info& info);

/// One output chunk of an execution: `{"type":"chunk","stream":S,"data":D}`.
json chunk_json(const output_chunk& c);

/// `chunk_json(c)` as an NDJSON line (with its newline), made in one pass
/// over the bytes: the streaming paths write one per chunk.
std::string chunk_line(const output_chunk& c);

/// Appends `bytes` as the inside of a JSON string (escaped, without the
/// quotes); false, with `out` as it was, when they are not valid UTF-8.
bool append_json_text(std::string& out, std::string_view bytes);

/// The result line of an execution; with `output`, its retained stdout and
/// stderr too (`stdout`/`stdout_b64`, `stderr`/`stderr_b64`).
json result_json(const exec_result& r, bool output);

/// A long-lived process (`ps --json`, `GET .../processes`).
json process_json(const actors::process_info& p, const std::string& session);

/// The metadata of `path` (`stat --json`, `GET .../stat/PATH`).
json stat_json(const std::string& path, const fs::file_stat& st);

/// One frame of a listing: `{"type":"entry","path","name","kind","size"}`.
json frame_json(const fs::frame& f);

/// The done line of a listing: `{"type":"done","count":N,"error":E}`, E
/// null or `{"code","message"}`.
json done_json(uint64_t count, const std::optional<sandbox::error>& err);

} // namespace sandbox::wire
