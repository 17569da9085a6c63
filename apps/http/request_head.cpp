// What a request carries, as the routes see it (exchange.hpp): its target
// split into percent-decoded segments and query parameters, its header
// fields; and the error answers of an exchange with their statuses.

#include <fmt/format.h>

#include "exchange.hpp"

namespace sandbox::http {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Percent-decodes `in` ('+' stays '+'); false for a bad escape.
bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size())
      return false;
    auto hi = hex_value(in[i + 1]);
    auto lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0)
      return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

} // namespace

bool parse_request_target(std::string_view target, request_head& h) {
  auto q = target.find('?');
  auto path = target.substr(0, q);
  if (path.empty() || path.front() != '/')
    return false;
  std::string part;
  size_t at = 1;
  while (at <= path.size()) {
    auto slash = path.find('/', at);
    auto seg = path.substr(at, slash == std::string_view::npos
                                 ? std::string_view::npos
                                 : slash - at);
    if (!percent_decode(seg, part))
      return false;
    h.segments.push_back(part);
    if (slash == std::string_view::npos)
      break;
    at = slash + 1;
  }
  // "/v1/sessions/" and "/v1/sessions" name the same route; a file route
  // keeps the slash (`trailing_slash`): "link/" follows a symlink.
  if (!h.segments.empty() && h.segments.back().empty()) {
    h.segments.pop_back();
    h.trailing_slash = true;
  }
  if (q == std::string_view::npos)
    return true;
  auto query = target.substr(q + 1);
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
    if (pair.empty())
      continue;
    auto eq = pair.find('=');
    std::string key;
    std::string value;
    if (!percent_decode(pair.substr(0, eq), key))
      return false;
    if (eq != std::string_view::npos
        && !percent_decode(pair.substr(eq + 1), value))
      return false;
    h.query[key] = value;
  }
  return true;
}

exchange::~exchange() = default;

const std::string& request_head::header(const std::string& lower_name) const {
  static const std::string none;
  auto i = headers.find(lower_name);
  return i == headers.end() ? none : i->second;
}

void exchange::fail(const sandbox::error& err) {
  fail(status_of(err.code), to_string(err.code), err.message);
}

void exchange::fail(status s, std::string_view code, std::string_view message,
                    fields extra) {
  reply(s, wire::error_json(code, message), std::move(extra));
}

status status_of(errc code) {
  switch (code) {
    case errc::invalid_argument:
      return status::bad_request;
    case errc::path_not_found:
    case errc::session_not_found:
    case errc::process_not_found:
      return status::not_found;
    case errc::not_a_regular_file:
      return status::unprocessable_entity;
    case errc::permission_denied:
      return status::forbidden;
    case errc::conflict:
      return status::conflict;
    case errc::timeout:
      return status::gateway_timeout;
    case errc::session_stopped:
      return status::gone;
    case errc::port_unavailable:
      return status::too_many_requests;
    case errc::unsupported:
      return status::not_implemented;
    case errc::node_unreachable:
    case errc::aborted:
      return status::service_unavailable;
    default:
      return status::internal_server_error;
  }
}

} // namespace sandbox::http
