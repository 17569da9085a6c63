// Output of the CLI: lines on stdout and stderr (and what happens when
// they cannot be written), errors, and bytes as text or base64.

#include "cli.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "sandbox/validation.hpp"

namespace sandbox::cli {

// -- output -------------------------------------------------------------------

namespace {

/// errno of the first failed write to fd 1 and fd 2 (0: none).
std::atomic<int> write_errors[3];

} // namespace

bool emit(int fd, std::string_view data) {
  if (write_errors[fd].load() != 0)
    return false;
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int expected = 0;
      write_errors[fd].compare_exchange_strong(expected, n < 0 ? errno : EIO);
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool output_failed() {
  return write_errors[1].load() != 0 || write_errors[2].load() != 0;
}

int output_status(int status) {
  for (int fd : {1, 2}) {
    auto err = write_errors[fd].load();
    if (err == 0)
      continue;
    if (err == EPIPE)
      return exit_broken_pipe;
    if (fd == 1)
      emit(2, fmt::format("sandbox: write stdout: {}\n", std::strerror(err)));
    return exit_error;
  }
  return status;
}

std::string json_line(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false,
                nlohmann::ordered_json::error_handler_t::replace);
}

bool print_json(const nlohmann::ordered_json& j) {
  return emit(1, json_line(j) + '\n');
}

int report(const global_options& g, const sandbox::error& err) {
  if (g.json)
    print_json({{"type", "error"},
                {"code", std::string{to_string(err.code)}},
                {"message", err.message}});
  else
    emit(2, fmt::format("sandbox: {}\n", escape_control(err.message)));
  return exit_error;
}

int usage_error(bool json, std::string_view message) {
  if (json)
    print_json({{"type", "error"},
                {"code", "usage"},
                {"message", std::string{message}}});
  else
    emit(2, fmt::format("sandbox: {}\n", escape_control(message)));
  return exit_usage;
}

int usage_error(const global_options& g, std::string_view message) {
  return usage_error(g.json, message);
}

// -- text and bytes -----------------------------------------------------------

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

std::string escape_control(std::string_view text) {
  return escape(text, escape_style::control);
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

void put_bytes(nlohmann::ordered_json& j, std::string_view bytes) {
  if (is_utf8(bytes))
    j["data"] = std::string{bytes};
  else
    j["data_b64"] = base64(bytes);
}

void put_path(nlohmann::ordered_json& j, const std::string& key,
              const std::string& path) {
  // Invalid bytes become U+FFFD when the line is dumped.
  j[key] = path;
  if (!is_utf8(path))
    j[key + "_b64"] = base64(path);
}

} // namespace sandbox::cli
