// `make demo`: the main job of sandbox on the embedded in-process node, told
// step by step for a newcomer.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "sandbox/client/blocking_files.hpp"
#include "sandbox/client/blocking_session.hpp"
#include "sandbox/client/embedded_node.hpp"
#include "sandbox/net/endpoint.hpp"
#include "sandbox/process/process_tree.hpp"

using namespace sandbox;
using namespace sandbox::actors;

namespace {

void step(const std::string& text) {
  fmt::print("\n\033[1m==> {}\033[0m\n", text);
  std::fflush(stdout);
}

void fail(const std::string& what, const sandbox::error& err) {
  fmt::print(stderr, "demo: {} failed: {}\n", what, err.message);
  std::exit(1);
}

/// A plain HTTP GET over loopback: the demo is an ordinary client of the
/// server the session runs.
std::string http_get(uint16_t port, const std::string& path) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return {};
  }
  auto req = fmt::format("GET {} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
  if (::write(fd, req.data(), req.size()) < 0) {
    ::close(fd);
    return {};
  }
  std::string resp;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0)
    resp.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return resp;
}

} // namespace

int main() {
  runtime_config rcfg;
  rcfg.reap_all_orphans = true;
  node_config ncfg;
  char tmpl[] = "/tmp/sandbox-demo-XXXXXX";
  ncfg.base_directory = ::mkdtemp(tmpl);
  embedded_node node{rcfg, ncfg};

  step("Create a session: a working directory, a home, one leased TCP port");
  auto session = blocking_session::create(node);
  if (!session)
    fail("create", session.error());
  auto info = session->info();
  fmt::print("id       {}\nworkdir  {}\nhome     {}\nport     {}\n", info->id,
             info->working_directory, info->home_directory, info->port);

  step("Run a command; its output streams as it is produced");
  auto start = std::chrono::steady_clock::now();
  auto r = session->execute_streaming(
    "for i in 1 2 3; do echo \"tick $i\"; sleep 0.2; done; echo done >&2", {},
    [&start](const output_chunk& c) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
      fmt::print("  [{:4} ms {}] {}", ms, to_string(c.stream), c.data);
      std::fflush(stdout);
    });
  if (!r)
    fail("execute", r.error());
  fmt::print("result: exit_code={} exit_reason={}\n", r->exit_code,
             to_string(r->reason));

  step("Write a file, list the directory, read the file back");
  auto files = files_of(*session);
  if (!files)
    fail("files", files.error());
  auto html = std::string{"<h1>Hello from a sandbox session</h1>\n"};
  if (auto ok = files->write_file("site/index.html", html); !ok)
    fail("write_file", ok.error());
  files->list(".", 2, [](const fs::frame& f) {
    fmt::print("  {:<8} {:>6}  {}\n", fs::to_string(f.kind), f.size, f.path);
    return true;
  });
  auto back = files->read_file("site/index.html");
  if (!back)
    fail("read_file", back.error());
  fmt::print("read back {} bytes: {}", back->size(), *back);

  step("Serve the directory on the session's leased port with spawn");
  auto server = session->spawn(fmt::format(
    "exec python3 -m http.server {} --bind 127.0.0.1 --directory site",
    info->port));
  if (!server)
    fail("spawn", server.error());
  auto endpoint = port_endpoint(info->port).value();
  fmt::print("server pid {} at {}\n", server->pid(), endpoint);
  std::string page;
  // The server needs a moment to bind; try for up to five seconds.
  for (int i = 0; i < 50 && page.empty(); ++i) {
    page = http_get(info->port, "/index.html");
    if (page.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  auto body = page.find("\r\n\r\n");
  fmt::print("GET {}/index.html ->\n  {}  {}", endpoint,
             page.substr(0, page.find("\r\n")),
             body == std::string::npos ? "(no answer)\n"
                                       : page.substr(body + 4));

  step("Leave something behind on purpose: a background job and an escaper");
  (void) session->execute("sleep 300 & setsid sleep 301 & true");
  auto marker = std::string{marker_variable} + "=" + info->id + "/";
  tree_query q;
  q.marker_prefix = marker;
  fmt::print("processes of the session now: {}\n", find_members(q).size());

  step("Stop the session: every process ends, the port is released");
  auto receipt = session->stop();
  if (!receipt)
    fail("stop", receipt.error());
  fmt::print("receipt: ended={} killed={} survivors={}\n", receipt->ended,
             receipt->killed, receipt->survivors);
  fmt::print("processes of the session left: {}\n", find_members(q).size());
  auto after = session->execute("true");
  fmt::print("a command after stop: {}\n",
             after ? std::string{"ran (unexpected)"} : after.error().message);
  std::string cleanup = fmt::format("rm -rf '{}'", ncfg.base_directory);
  if (std::system(cleanup.c_str()) != 0)
    fmt::print("(could not remove {})\n", ncfg.base_directory);
  step("Done");
  return receipt->survivors == 0 && find_members(q).empty() ? 0 : 1;
}
