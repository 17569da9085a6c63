#include "cli.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "sandbox/actors/registration.hpp"
#include "sandbox/validation.hpp"

namespace sandbox::cli {

void write_fd(int fd, std::string_view data) {
  while (!data.empty()) {
    auto n = ::write(fd, data.data(), data.size());
    if (n <= 0) {
      if (n < 0 && errno == EINTR)
        continue;
      return;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void print_json(const nlohmann::ordered_json& j) {
  auto line = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  line += '\n';
  write_fd(1, line);
}

int report(const global_options& g, const sandbox::error& err) {
  if (g.json) {
    print_json({{"type", "error"},
                {"code", std::string{to_string(err.code)}},
                {"message", err.message}});
  } else {
    auto line = fmt::format("sandbox: {}\n", err.message);
    write_fd(2, line);
  }
  return exit_error;
}

std::string base64(std::string_view bytes) {
  static constexpr char alphabet[]
    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    auto n = (static_cast<uint8_t>(bytes[i]) << 16)
             | (static_cast<uint8_t>(bytes[i + 1]) << 8)
             | static_cast<uint8_t>(bytes[i + 2]);
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += alphabet[(n >> 6) & 63];
    out += alphabet[n & 63];
  }
  if (auto rest = bytes.size() - i; rest > 0) {
    auto n = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2)
      n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    out += rest == 2 ? alphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

void put_bytes(nlohmann::ordered_json& j, const std::string& bytes) {
  try {
    // strict: throws on invalid UTF-8, which then travels as base64.
    (void) nlohmann::ordered_json(bytes).dump();
    j["data"] = bytes;
  } catch (const nlohmann::json::type_error&) {
    j["data_b64"] = base64(bytes);
  }
}

result<std::pair<std::string, std::string>>
parse_env_entry(const std::string& entry) {
  auto eq = entry.find('=');
  if (eq == std::string::npos)
    return error{errc::invalid_argument,
                 fmt::format("--env expects K=V, got {}",
                             quote_for_message(entry))};
  auto name = entry.substr(0, eq);
  if (!is_valid_env_name(name))
    return error{errc::invalid_argument,
                 fmt::format("invalid environment variable name: {}",
                             quote_for_message(name))};
  return std::make_pair(name, entry.substr(eq + 1));
}

result<std::chrono::milliseconds> parse_timeout(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return error{errc::invalid_argument,
                 fmt::format("--timeout must be a non-negative number of "
                             "seconds, got {}",
                             seconds)};
  auto ms = static_cast<int64_t>(std::ceil(seconds * 1000.0));
  return std::chrono::milliseconds{ms};
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

int with_session(const global_options& g,
                 const std::function<int(actors::blocking_session&)>& body) {
  if (!g.node.empty())
    return report(g, {errc::unsupported,
                      fmt::format("--node {}: remote nodes are not supported "
                                  "by this build yet",
                                  g.node)});
  if (!g.session.empty())
    return report(g, {errc::session_not_found,
                      fmt::format("no such session: {} (sessions persist "
                                  "only on a remote node)",
                                  g.session)});
  actors::session_config cfg;
  cfg.working_directory = ".";
  auto session = actors::blocking_session::create(embedded(), cfg);
  if (!session)
    return report(g, session.error());
  auto status = body(*session);
  (void) session->stop();
  return status;
}

} // namespace sandbox::cli
