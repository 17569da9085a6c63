#pragma once

// What the HTTP suites share: a `sandbox serve --http` node on free
// loopback ports, and curl to talk to it (docs/http.md).

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helpers/serve_process.hpp"
#include "helpers/temp_dir.hpp"

extern char** environ;

namespace sandbox::test {

using json = nlohmann::json;

/// An HTTP answer as curl saw it.
struct http_answer {
  /// The status, 0 when curl got none (its exit status is in `curl_exit`).
  int status = 0;
  int curl_exit = -1;
  /// Header fields by lower-case name (of the last response curl read).
  std::map<std::string, std::string> headers;
  std::string body;
  std::string err;

  json body_json() const {
    return json::parse(body, nullptr, false);
  }

  /// The NDJSON lines of the body.
  std::vector<json> lines() const {
    std::vector<json> out;
    std::istringstream in{body};
    std::string line;
    while (std::getline(in, line))
      if (!line.empty())
        out.push_back(json::parse(line, nullptr, false));
    return out;
  }

  std::string header(const std::string& lower) const {
    auto i = headers.find(lower);
    return i == headers.end() ? std::string{} : i->second;
  }
};

inline std::string read_all(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs a program directly (no shell), stdout and stderr to files; returns
/// its exit status.
inline int run_program(const std::vector<std::string>& args,
                       const std::string& out_path, const std::string& err_path,
                       const std::string& in_path = "/dev/null") {
  std::vector<std::string> a = args;
  std::vector<char*> argv;
  for (auto& s : a)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    return -1;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/// One request made with curl.
struct request {
  std::string method = "GET";
  std::string path;
  std::vector<std::string> headers;
  /// The body (sent with --data-binary), when `has_body`.
  std::string body;
  bool has_body = false;
  /// The token to send; empty: none.
  std::string token;
  bool with_token = true;
  std::vector<std::string> extra;
};

/// The route templates the suites have hit, as `METHOD /v1/...` (with
/// `{id}`, `{pid}` and `{path}` for the variable parts).
inline std::set<std::string>& routes_hit() {
  static std::set<std::string> hit;
  return hit;
}

/// `/v1/sessions/abc/files/x/y` as `/v1/sessions/{id}/files/{path}`.
inline std::string route_template(const std::string& path) {
  auto q = path.find('?');
  std::vector<std::string> seg;
  std::string cur;
  for (char c : path.substr(0, q)) {
    if (c == '/') {
      seg.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  seg.push_back(cur);
  // seg[0] is "" (the leading slash).
  std::string out;
  for (size_t i = 1; i < seg.size(); ++i) {
    if (seg[1] == "v1" && seg.size() > 3 && seg[2] == "sessions") {
      if (i == 3) {
        out += "/{id}";
        continue;
      }
      if (i == 5 && seg[4] == "processes") {
        out += "/{pid}";
        continue;
      }
      if (i == 5
          && (seg[4] == "files" || seg[4] == "list" || seg[4] == "stat")) {
        out += "/{path}";
        break;
      }
    }
    out += "/" + seg[i];
  }
  return out;
}

/// A node serving HTTP, with one token (its own generated one, or the
/// token file `tokens` names).
struct http_node {
  std::unique_ptr<serve_process> node;
  std::string base;
  std::string token;
  std::string token_file;
  temp_dir io;
  int counter = 0;

  explicit http_node(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--json", "--http", "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    node = std::make_unique<serve_process>(args, io.at("node.log"));
    auto ready = json::parse(node->ready, nullptr, false);
    if (ready.is_discarded() || !ready["http"].is_object())
      throw std::runtime_error("no http in the ready line: " + node->ready);
    base = "http://127.0.0.1:"
           + std::to_string(ready["http"]["port"].get<int>());
    token_file = ready["http"]["token_file"].get<std::string>();
    token = read_all(token_file);
    while (!token.empty()
           && std::isspace(static_cast<unsigned char>(token.back())))
      token.pop_back();
  }

  std::string log() const {
    return read_all(io.at("node.log"));
  }

  http_answer send(request r) {
    auto n = std::to_string(++counter);
    auto out = io.at("body" + n);
    auto hdr = io.at("headers" + n);
    auto err = io.at("err" + n);
    auto in = io.at("in" + n);
    std::vector<std::string> args{"curl", "-sS",   "-o", out,
                                  "-D",   hdr,     "-w", "%{http_code}",
                                  "-X",   r.method};
    if (r.with_token)
      args.insert(args.end(), {"-H", "Authorization: Bearer "
                                       + (r.token.empty() ? token : r.token)});
    for (auto& h : r.headers)
      args.insert(args.end(), {"-H", h});
    if (r.has_body) {
      std::ofstream f{in, std::ios::binary};
      f << r.body;
      f.close();
      args.insert(args.end(), {"--data-binary", "@" + in});
    }
    args.insert(args.end(), r.extra.begin(), r.extra.end());
    args.push_back(base + r.path);
    auto code_path = io.at("code" + n);
    http_answer a;
    a.curl_exit = run_program(args, code_path, err);
    auto code = read_all(code_path);
    a.status = code.empty() ? 0 : std::atoi(code.c_str());
    a.body = read_all(out);
    a.err = read_all(err);
    std::istringstream hs{read_all(hdr)};
    std::string line;
    while (std::getline(hs, line)) {
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      if (line.rfind("HTTP/", 0) == 0) {
        a.headers.clear();
        continue;
      }
      auto colon = line.find(':');
      if (colon == std::string::npos)
        continue;
      auto name = line.substr(0, colon);
      for (auto& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ')
        value.erase(0, 1);
      a.headers[name] = value;
    }
    if (r.path.rfind("/v1/", 0) == 0 && a.status != 0 && a.status != 401
        && a.status != 404 && a.status != 405)
      routes_hit().insert(r.method + " " + route_template(r.path));
    return a;
  }

  http_answer get(const std::string& path, std::vector<std::string> h = {}) {
    request r;
    r.path = path;
    r.headers = std::move(h);
    return send(std::move(r));
  }

  http_answer post(const std::string& path, const json& body,
                   std::vector<std::string> h = {}) {
    request r;
    r.method = "POST";
    r.path = path;
    r.headers = std::move(h);
    r.headers.push_back("Content-Type: application/json");
    r.body = body.dump();
    r.has_body = true;
    return send(std::move(r));
  }

  http_answer put(const std::string& path, const std::string& bytes,
                  std::vector<std::string> h = {}) {
    request r;
    r.method = "PUT";
    r.path = path;
    r.headers = std::move(h);
    r.headers.push_back("Content-Type: application/octet-stream");
    r.body = bytes;
    r.has_body = true;
    return send(std::move(r));
  }

  http_answer del(const std::string& path, std::vector<std::string> h = {}) {
    request r;
    r.method = "DELETE";
    r.path = path;
    r.headers = std::move(h);
    return send(std::move(r));
  }

  /// A new session; its id.
  std::string new_session(const json& body = json::object()) {
    auto a = post("/v1/sessions", body);
    if (a.status != 201)
      throw std::runtime_error("POST /v1/sessions: " + std::to_string(a.status)
                               + " " + a.body);
    return a.body_json()["id"].get<std::string>();
  }
};

} // namespace sandbox::test
