#include "cli.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "interrupt.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/validation.hpp"

namespace sandbox::cli {

const char* const global_options_footer
  = "Global options (before or after the subcommand): --json (one JSON "
    "object per line, errors too), --log-level LEVEL, --node HOST:PORT, "
    "--session ID, --tls-cert/--tls-key/--tls-ca FILE. See `sandbox "
    "--help`.";

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

// -- input ------------------------------------------------------------------

result<size_t> read_full(int fd, std::string& buf, std::string_view what,
                         bool whole) {
  size_t used = 0;
  while (used < buf.size() && (whole || used == 0)) {
    auto n = ::read(fd, buf.data() + used, buf.size() - used);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return make_errno_error(errno, fmt::format("cannot read {}", what));
    if (n == 0)
      break;
    used += static_cast<size_t>(n);
  }
  return used;
}

// -- option values ------------------------------------------------------------

result<std::pair<std::string, std::string>>
parse_env_entry(const std::string& entry) {
  auto eq = entry.find('=');
  if (eq == std::string::npos)
    return error{errc::invalid_argument,
                 fmt::format("--env expects NAME=VALUE, got {}",
                             quote_for_message(entry))};
  auto name = entry.substr(0, eq);
  if (!is_valid_env_name(name))
    return error{errc::invalid_argument,
                 fmt::format("--env: invalid environment variable name: {} "
                             "(expected [A-Za-z_][A-Za-z0-9_]*)",
                             quote_for_message(name))};
  return std::make_pair(name, entry.substr(eq + 1));
}

result<std::chrono::milliseconds> parse_timeout(const std::string& text) {
  return parse_seconds("--timeout", text);
}

result<std::chrono::milliseconds> parse_seconds(std::string_view option,
                                                const std::string& text) {
  auto bad = [&] {
    return error{errc::invalid_argument,
                 fmt::format("{} expects seconds from 0 to {:.0f} "
                             "(fractions allowed, 0 = none), got {}",
                             option, max_timeout_seconds,
                             quote_for_message(text))};
  };
  // strtod also takes "inf", "nan" and hex; only plain decimals pass.
  if (text.empty()
      || text.find_first_not_of("0123456789.eE+-") != std::string::npos)
    return bad();
  errno = 0;
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE
      || !std::isfinite(seconds) || seconds < 0
      || seconds > max_timeout_seconds)
    return bad();
  auto ms = static_cast<int64_t>(std::ceil(seconds * 1000.0));
  return std::chrono::milliseconds{ms};
}

result<uint64_t> parse_integer(std::string_view option, const std::string& text,
                               uint64_t lo, uint64_t hi) {
  auto bad = [&] {
    return error{errc::invalid_argument,
                 fmt::format("{} expects an integer from {} to {}, got {}",
                             option, lo, hi, quote_for_message(text))};
  };
  if (text.empty() || text.size() > 20
      || text.find_first_not_of("0123456789") != std::string::npos)
    return bad();
  errno = 0;
  auto value = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value < lo || value > hi)
    return bad();
  return static_cast<uint64_t>(value);
}

// -- sessions -----------------------------------------------------------------

actors::tls_config tls_of(const global_options& g) {
  return {g.tls_cert, g.tls_key, g.tls_ca};
}

std::optional<int> check_tls(const global_options& g) {
  for (auto& node : g.nodes)
    if (auto addr = actors::parse_node_address(node); !addr)
      return usage_error(g, "--node: " + addr.error().message);
  auto tls = tls_of(g);
  if (!tls.enabled())
    return std::nullopt;
  if (g.tls_cert.empty() || g.tls_key.empty() || g.tls_ca.empty())
    return usage_error(g, actors::validate(tls).error().message);
  if (auto ok = actors::validate(tls); !ok)
    return report(g, ok.error());
  return std::nullopt;
}

result<actors::node_pool*> remote_nodes(const global_options& g) {
  static std::optional<actors::node_pool> pool;
  if (!pool) {
    auto got = actors::node_pool::connect(g.nodes, tls_of(g));
    if (!got)
      return got.error();
    for (auto& err : got->unreachable())
      spdlog::info("{} (skipped)", err.message);
    pool.emplace(std::move(*got));
  }
  return &*pool;
}

actors::embedded_node& embedded() {
  static std::unique_ptr<actors::embedded_node> node = [] {
    actors::runtime_config cfg;
    // The CLI process is only a node: every orphan re-parented to it is
    // one of its sessions' descendants.
    cfg.reap_all_orphans = true;
    return std::make_unique<actors::embedded_node>(cfg);
  }();
  return *node;
}

void apply_isolation(const global_options& g, actors::session_config& cfg) {
  if (auto mode = parse_isolation(g.isolation); mode)
    cfg.isolation = *mode;
  if (!g.allow_net.empty())
    cfg.allow_net = g.allow_net;
}

result<acquired_session> acquire_session(const global_options& g,
                                         actors::session_config cfg) {
  apply_isolation(g, cfg);
  if (!g.nodes.empty()) {
    auto pool = remote_nodes(g);
    if (!pool)
      return pool.error();
    if (!g.session.empty()) {
      auto found = (*pool)->find(g.session);
      if (!found)
        return found.error();
      return acquired_session{std::move(found->first), false};
    }
    // A fresh session; without a working directory, a new one under the
    // node's base directory.
    auto created = (*pool)->create(std::move(cfg));
    if (!created)
      return created.error();
    return acquired_session{std::move(created->first), true};
  }
  if (!g.session.empty())
    return sandbox::error{errc::session_not_found,
                          fmt::format("no such session: {} (sessions persist "
                                      "only on a remote node)",
                                      g.session)};
  if (cfg.working_directory.empty())
    cfg.working_directory = ".";
  auto created = actors::blocking_session::create(embedded(), std::move(cfg));
  if (!created)
    return created.error();
  return acquired_session{std::move(*created), true};
}

int with_session(const global_options& g,
                 const std::function<int(actors::blocking_session&)>& body,
                 bool runs_commands) {
  auto acquired = acquire_session(g, {});
  if (!acquired)
    return report(g, acquired.error());
  // main exits with 128 + the signal once the stop is done.
  std::optional<interrupt_guard> wait_for_stop;
  if (runs_commands && acquired->owned)
    wait_for_stop.emplace([] {});
  auto status = body(acquired->session);
  if (acquired->owned)
    (void) acquired->session.stop();
  return status;
}

} // namespace sandbox::cli
