#include "wire/json.hpp"

#include <openssl/evp.h>

#include "sandbox/net/endpoint.hpp"

namespace sandbox::wire {

bool is_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size())
      return false;
    for (size_t k = 1; k < len; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // No overlong forms, no surrogates, nothing above U+10FFFF.
    static constexpr uint32_t min_of[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_of[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += len;
  }
  return true;
}

std::string base64(std::string_view bytes) {
  // EVP_EncodeBlock takes an int length: whole groups of 3 bytes at a time,
  // so that only the last piece is padded.
  constexpr size_t piece = 3 * 1024 * 1024;
  std::string out;
  out.resize((bytes.size() + 2) / 3 * 4 + 1); // + the NUL it writes
  size_t used = 0;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    auto in = bytes.substr(at, piece);
    used += static_cast<size_t>(
      ::EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data() + used),
                        reinterpret_cast<const unsigned char*>(in.data()),
                        static_cast<int>(in.size())));
  }
  out.resize(used);
  return out;
}

bool from_base64(std::string_view text, std::string& out) {
  if (text.size() % 4 != 0)
    return false;
  out.clear();
  // EVP_DecodeBlock takes an int length: whole groups of 4 characters.
  constexpr size_t piece = 4 * 1024 * 1024;
  for (size_t at = 0; at < text.size(); at += piece) {
    auto in = text.substr(at, piece);
    std::string buf(in.size() / 4 * 3 + 1, '\0');
    auto n
      = ::EVP_DecodeBlock(reinterpret_cast<unsigned char*>(buf.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
    if (n < 0)
      return false;
    // EVP_DecodeBlock counts the padding as zero bytes.
    size_t pad = 0;
    if (at + in.size() == text.size())
      for (auto i = in.rbegin(); i != in.rend() && *i == '=' && pad < 2; ++i)
        ++pad;
    out.append(buf.data(), static_cast<size_t>(n) - pad);
  }
  return true;
}

void put_bytes(json& j, std::string_view bytes, const std::string& key) {
  if (is_utf8(bytes))
    j[key] = std::string{bytes};
  else
    j[key + "_b64"] = base64(bytes);
}

void put_path(json& j, const std::string& key, const std::string& path) {
  // Invalid bytes become U+FFFD when the line is dumped.
  j[key] = path;
  if (!is_utf8(path))
    j[key + "_b64"] = base64(path);
}

std::string line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_json(std::string_view code, std::string_view message) {
  return {{"type", "error"},
          {"code", std::string{code}},
          {"message", std::string{message}}};
}

json error_json(const sandbox::error& err) {
  return error_json(to_string(err.code), err.message);
}

json session_json(const actors::session_info& info) {
  auto endpoint = port_endpoint(info.port);
  json j{{"type", "session"}, {"id", info.id}};
  put_path(j, "working_directory", info.working_directory);
  put_path(j, "home_directory", info.home_directory);
  j["port"] = info.port;
  j["endpoint"] = endpoint ? *endpoint : std::string{};
  j["children"] = info.children;
  j["isolation"] = to_string(info.isolation);
  return j;
}

json chunk_json(const output_chunk& c) {
  json j{{"type", "chunk"}, {"stream", to_string(c.stream)}};
  put_bytes(j, c.data);
  return j;
}

bool append_json_text(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  auto start = out.size();
  out.reserve(start + s.size() + s.size() / 16 + 8);
  size_t i = 0;
  while (i < s.size()) {
    // A run of bytes that need nothing: copied at once.
    size_t run = i;
    while (run < s.size()) {
      auto c = static_cast<unsigned char>(s[run]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
        break;
      ++run;
    }
    out.append(s.data() + i, run - i);
    i = run;
    if (i == s.size())
      break;
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 0xF];
      }
      ++i;
      continue;
    }
    // One multi-byte sequence, checked as is_utf8 does, copied as is.
    size_t len = (c & 0xE0) == 0xC0   ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 0;
    if (len == 0 || i + len > s.size() || !is_utf8(s.substr(i, len))) {
      out.resize(start);
      return false;
    }
    out.append(s.data() + i, len);
    i += len;
  }
  return true;
}

std::string chunk_line(const output_chunk& c) {
  std::string out;
  out.reserve(c.data.size() + 64);
  out += R"({"type":"chunk","stream":")";
  out += to_string(c.stream);
  out += R"(","data":")";
  if (!append_json_text(out, c.data)) {
    out.resize(out.size() - 8); // back to `"stream":"...",`
    out += R"("data_b64":")";
    out += base64(c.data);
  }
  out += "\"}\n";
  return out;
}

json result_json(const exec_result& r, bool output) {
  auto violations = json::array();
  for (auto& v : r.violations)
    violations.push_back({{"kind", std::string{to_string(v.kind)}},
                          {"execution", v.execution},
                          {"detail", v.detail}});
  json ended_by;
  if (r.ended_by != violation_kind::none)
    ended_by = std::string{to_string(r.ended_by)};
  json j{{"type", "result"},
         {"exit_code", r.exit_code},
         {"exit_reason", std::string{to_string(r.reason)}}};
  if (output) {
    put_bytes(j, r.stdout_data, "stdout");
    put_bytes(j, r.stderr_data, "stderr");
  }
  j["truncated"] = r.truncated;
  j["dropped_bytes"] = r.dropped_bytes;
  j["ended_by"] = std::move(ended_by);
  j["violations"] = std::move(violations);
  j["violations_dropped"] = r.violations_dropped;
  return j;
}

json process_json(const actors::process_info& p, const std::string& session) {
  json j{{"type", "process"},
         {"id", p.id},
         {"session", session},
         {"command", p.command},
         {"pid", p.pid},
         {"state", p.running ? "running" : "exited"},
         {"tty", p.tty},
         {"stdin_open", p.stdin_open},
         {"next_offset", p.next_offset},
         {"retained_from", p.retained_from}};
  if (!p.running) {
    j["exit_code"] = p.exit_code;
    j["exit_reason"] = std::string{to_string(p.reason)};
  }
  return j;
}

json stat_json(const std::string& path, const fs::file_stat& st) {
  json j{{"type", "stat"}};
  put_path(j, "path", path);
  j["kind"] = std::string{to_string(st.kind)};
  j["size"] = st.size;
  j["mtime_ns"] = st.mtime_ns;
  j["dev"] = st.dev;
  j["ino"] = st.ino;
  j["version"] = st.version;
  return j;
}

json frame_json(const fs::frame& f) {
  json j{{"type", "entry"}};
  put_path(j, "path", f.path);
  put_path(j, "name", f.name);
  j["kind"] = std::string{to_string(f.kind)};
  j["size"] = f.size;
  return j;
}

json done_json(uint64_t count, const std::optional<sandbox::error>& err) {
  json error = nullptr;
  if (err)
    error = {{"code", std::string{to_string(err->code)}},
             {"message", err->message}};
  return {{"type", "done"}, {"count", count}, {"error", std::move(error)}};
}

} // namespace sandbox::wire
