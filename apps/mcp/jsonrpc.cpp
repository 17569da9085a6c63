#include "jsonrpc.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "mcp/server.hpp"

namespace sandbox::mcp {

namespace jsonrpc {

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_response(const json& id, int code, std::string message) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"error", {{"code", code}, {"message", std::move(message)}}}};
}

json result_response(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

bool valid_id(const json& id) {
  return id.is_string() || id.is_number_integer();
}

std::string brief(const json& j) {
  auto text = dump(j);
  if (text.size() > 80)
    text = text.substr(0, 77) + "...";
  return text;
}

namespace {

/// What a message is, for the debug log: its method, id and size, never
/// its contents (tool results carry command output, calls carry file
/// contents).
std::string outline(const json& msg, size_t bytes) {
  if (msg.is_array())
    return fmt::format("batch of {} ({} bytes)", msg.size(), bytes);
  std::string out;
  if (msg.is_object()) {
    if (auto m = msg.find("method"); m != msg.end() && m->is_string())
      out += m->get<std::string>() + " ";
    if (auto i = msg.find("id"); i != msg.end())
      out += "id " + brief(*i) + " ";
    if (msg.contains("error"))
      out += "error ";
  }
  return fmt::format("{}({} bytes)", out, bytes);
}

std::string type_name(const json& j) {
  if (j.is_number_float())
    return "a non-integer number";
  if (j.is_number())
    return "a number";
  return std::string{"a"} + (j.is_object() || j.is_array() ? "n " : " ")
         + j.type_name();
}

/// Checks the envelope of one message and hands it to `h`; answers what
/// is wrong with it.
void handle(const json& msg, const batch_ptr& b, output& out, handler& h) {
  if (!msg.is_object())
    return out.deliver(
      b, error_response(nullptr, invalid_request,
                        fmt::format("Invalid Request: a message must be a "
                                    "JSON object, got {}",
                                    type_name(msg))));
  json id = nullptr;
  auto has_id = msg.contains("id");
  if (has_id) {
    if (!valid_id(msg["id"]))
      return out.deliver(
        b, error_response(nullptr, invalid_request,
                          fmt::format("Invalid Request: id must be a string "
                                      "or an integer, got {}",
                                      brief(msg["id"]))));
    id = msg["id"];
  }
  auto jv = msg.find("jsonrpc");
  if (jv == msg.end() || *jv != "2.0")
    return out.deliver(b, error_response(id, invalid_request,
                                         "Invalid Request: jsonrpc must be "
                                         "\"2.0\""));
  auto m = msg.find("method");
  if (m == msg.end()) {
    if (has_id && (msg.contains("result") || msg.contains("error"))) {
      // A response: the server sends no requests, so nobody waits.
      spdlog::warn("mcp: ignoring a response to no request (id {})", brief(id));
      return out.deliver(b, std::nullopt);
    }
    return out.deliver(b, error_response(id, invalid_request,
                                         "Invalid Request: method is missing"));
  }
  if (!m->is_string())
    return out.deliver(
      b, error_response(id, invalid_request,
                        fmt::format("Invalid Request: method must be a "
                                    "string, got {}",
                                    brief(*m))));
  json params = nullptr;
  if (auto p = msg.find("params"); p != msg.end()) {
    if (!p->is_object() && !p->is_array())
      return out.deliver(
        b, error_response(id, invalid_request,
                          fmt::format("Invalid Request: params must be an "
                                      "object or an array, got {}",
                                      brief(*p))));
    params = *p;
  }
  auto method = m->get<std::string>();
  if (!has_id) {
    h.notification(method, params);
    return out.deliver(b, std::nullopt);
  }
  h.request(id, method, params, b);
}

} // namespace

output::output(writer write) : write_(std::move(write)) {
}

void output::send(const json& msg) {
  auto line = dump(msg);
  spdlog::debug("mcp -> {}", outline(msg, line.size()));
  std::lock_guard<std::mutex> guard{mtx_};
  write_(line);
}

void output::deliver(const batch_ptr& b, std::optional<json> response) {
  if (!b) {
    if (response)
      send(*response);
    return;
  }
  json out;
  {
    std::lock_guard<std::mutex> guard{b->mtx};
    if (response)
      b->responses.push_back(std::move(*response));
    if (--b->outstanding > 0 || b->responses.empty())
      return;
    out = std::move(b->responses);
  }
  send(out);
}

handler::~handler() = default;

void read_line(std::string_view line, const std::string& version, output& out,
               handler& h) {
  while (!line.empty()
         && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
    line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos)
    return; // blank lines carry nothing
  json msg;
  try {
    msg = json::parse(line);
    spdlog::debug("mcp <- {}", outline(msg, line.size()));
  } catch (const json::parse_error& e) {
    spdlog::warn("mcp: malformed message: {}", e.what());
    out.send(error_response(nullptr, parse_error,
                            fmt::format("Parse error: {}", e.what())));
    return;
  }
  if (!msg.is_array()) {
    handle(msg, nullptr, out, h);
    return;
  }
  if (version != batch_version) {
    out.send(error_response(
      nullptr, invalid_request,
      fmt::format("Invalid Request: JSON-RPC batches are not supported "
                  "under protocol version {} (only under {})",
                  version.empty() ? "(none negotiated yet)" : version,
                  batch_version)));
    return;
  }
  if (msg.empty()) {
    out.send(error_response(nullptr, invalid_request,
                            "Invalid Request: an empty batch"));
    return;
  }
  auto b = std::make_shared<batch>();
  for (auto& member : msg) {
    {
      std::lock_guard<std::mutex> guard{b->mtx};
      ++b->outstanding;
    }
    handle(member, b, out, h);
  }
  out.deliver(b, std::nullopt);
}

} // namespace jsonrpc

result<void> serve_lines(server& srv, int in_fd, int wake_fd, size_t max_line) {
  std::string buf;
  bool skipping = false; // inside a line that was too long
  bool at_end = false;
  std::vector<char> chunk(64 * 1024);
  result<void> outcome;
  for (;;) {
    pollfd fds[2] = {{in_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    auto n = ::poll(fds, wake_fd >= 0 ? 2 : 1, -1);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      outcome = make_errno_error(errno, "poll stdin");
      break;
    }
    if (wake_fd >= 0 && fds[1].revents != 0)
      break;
    auto got = ::read(in_fd, chunk.data(), chunk.size());
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (got < 0) {
      outcome = make_errno_error(errno, "read stdin");
      break;
    }
    if (got == 0) {
      if (!skipping && !buf.empty())
        srv.receive(buf); // a last line without its newline
      at_end = true;
      break;
    }
    buf.append(chunk.data(), static_cast<size_t>(got));
    auto too_long = [&] {
      srv.reject_line(fmt::format("a message longer than {} bytes", max_line));
    };
    size_t start = 0;
    for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos;
         start = nl + 1) {
      if (skipping)
        skipping = false; // the end of a line already answered
      else if (nl - start > max_line)
        too_long();
      else
        srv.receive(std::string_view{buf}.substr(start, nl - start));
    }
    buf.erase(0, start);
    if (!skipping && buf.size() > max_line) {
      too_long();
      skipping = true;
    }
    if (skipping)
      buf.clear();
  }
  auto cancelled = srv.shutdown();
  // A client that closes its input before the answers came (e.g. a request
  // file piped in by hand) loses those calls: say so.
  if (at_end && cancelled > 0)
    spdlog::warn("mcp: cancelled {} call{} at end of input", cancelled,
                 cancelled == 1 ? "" : "s");
  return outcome;
}

} // namespace sandbox::mcp
