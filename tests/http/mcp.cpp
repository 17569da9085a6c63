// http.mcp: MCP's Streamable HTTP transport at /mcp with curl (docs/mcp.md,
// "Over HTTP"): sessions, JSON and SSE answers, a dropped stream resumed
// with Last-Event-ID without a lost event, DELETE, and what is refused.

#define CAF_SUITE http.mcp
#include "caf/test/dsl.hpp"

#include <sstream>
#include <thread>

#include "helpers/check.hpp"
#include "http_fixture.hpp"

using namespace sandbox::test;

namespace {

const std::string accept_both = "Accept: application/json, text/event-stream";

json rpc(int id, const std::string& method, json params = json::object()) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", method},
          {"params", std::move(params)}};
}

json init_params() {
  return {{"protocolVersion", "2025-06-18"},
          {"capabilities", json::object()},
          {"clientInfo", {{"name", "http.mcp"}, {"version", "1"}}}};
}

/// One SSE event: its id and its data as JSON.
struct sse_event {
  std::string id;
  json data;
};

std::vector<sse_event> events_of(const std::string& body) {
  std::vector<sse_event> out;
  std::istringstream in{body};
  std::string line;
  sse_event cur;
  bool any = false;
  while (std::getline(in, line)) {
    if (line.rfind("id: ", 0) == 0) {
      cur.id = line.substr(4);
      any = true;
    } else if (line.rfind("data: ", 0) == 0) {
      cur.data = json::parse(line.substr(6), nullptr, false);
      any = true;
    } else if (line.empty() && any) {
      out.push_back(cur);
      cur = {};
      any = false;
    }
  }
  return out;
}

struct fixture {
  http_node n;

  /// Initializes an MCP session; its id.
  std::string open(std::vector<std::string> headers = {}) {
    headers.push_back(accept_both);
    auto a = n.post("/mcp", rpc(1, "initialize", init_params()), headers);
    if (a.status != 200)
      throw std::runtime_error("initialize: " + a.body);
    auto id = a.header("mcp-session-id");
    n.post("/mcp",
           {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
           {accept_both, "Mcp-Session-Id: " + id});
    return id;
  }

  http_answer call(const std::string& sid, const json& msg,
                   std::vector<std::string> extra = {}) {
    extra.push_back("Mcp-Session-Id: " + sid);
    extra.push_back("MCP-Protocol-Version: 2025-06-18");
    return n.post("/mcp", msg, extra);
  }

  size_t sandbox_sessions() {
    auto l = n.get("/v1/sessions").body_json();
    return l["sessions"].size();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(http_mcp, fixture)

CAF_TEST(initialize makes an MCP session bound to a new sandbox session) {
  auto a = n.post("/mcp", rpc(1, "initialize", init_params()), {accept_both});
  CAF_REQUIRE_EQUAL(a.status, 200);
  auto sid = a.header("mcp-session-id");
  CAF_CHECK(!sid.empty());
  auto r = a.body_json();
  CAF_CHECK_EQUAL(r["result"]["protocolVersion"], "2025-06-18");
  CAF_CHECK_EQUAL(r["result"]["serverInfo"]["name"], "sandbox");
  CAF_CHECK_EQUAL(sandbox_sessions(), 1u);
  auto note
    = call(sid, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
           {accept_both});
  CAF_CHECK_EQUAL(note.status, 202);
  auto tools = call(sid, rpc(2, "tools/list"), {accept_both});
  CAF_CHECK_EQUAL(tools.status, 200);
  CAF_CHECK_EQUAL(tools.header("content-type"), "application/json");
  std::vector<std::string> names;
  auto listed = tools.body_json();
  for (auto& t : listed["result"]["tools"])
    names.push_back(t["name"]);
  CAF_CHECK(std::find(names.begin(), names.end(), "shell") != names.end());
  CAF_CHECK(std::find(names.begin(), names.end(), "process_start")
            != names.end());
  // A call answered as JSON when the client takes JSON only.
  auto run = call(sid,
                  rpc(3, "tools/call",
                      {{"name", "shell"},
                       {"arguments",
                        {{"command", "echo from-mcp > f.txt; "
                                     "cat f.txt"}}}}),
                  {"Accept: application/json"});
  CAF_CHECK_EQUAL(run.status, 200);
  auto res = run.body_json()["result"];
  CAF_CHECK_EQUAL(res["isError"], false);
  CAF_CHECK_EQUAL(res["structuredContent"]["stdout"], "from-mcp\n");
  // DELETE ends it and the sandbox session it made.
  request del;
  del.method = "DELETE";
  del.path = "/mcp";
  del.headers = {"Mcp-Session-Id: " + sid};
  CAF_CHECK_EQUAL(n.send(del).status, 200);
  CAF_CHECK_EQUAL(sandbox_sessions(), 0u);
  auto after = call(sid, rpc(4, "ping"), {accept_both});
  CAF_CHECK_EQUAL(after.status, 404);
}

CAF_TEST(a call streams its progress as SSE events with ids) {
  auto sid = open();
  auto a = call(sid,
                rpc(7, "tools/call",
                    {{"name", "shell"},
                     {"arguments",
                      {{"command", "for i in 1 2 3; do echo "
                                   "$i; sleep 0.4; done"}}},
                     {"_meta", {{"progressToken", "tok"}}}}),
                {accept_both});
  CAF_REQUIRE_EQUAL(a.status, 200);
  CAF_CHECK_EQUAL(a.header("content-type"), "text/event-stream");
  auto ev = events_of(a.body);
  CAF_REQUIRE(ev.size() >= 3);
  // The priming event: an id, no data.
  CAF_CHECK(ev[0].id.size() > 2
            && ev[0].id.substr(ev[0].id.size() - 2) == "-0");
  CAF_CHECK(ev[0].data.is_null());
  for (size_t i = 1; i + 1 < ev.size(); ++i) {
    CAF_CHECK_EQUAL(ev[i].data["method"], "notifications/progress");
    CAF_CHECK_EQUAL(ev[i].data["params"]["progressToken"], "tok");
  }
  CAF_CHECK_EQUAL(ev.back().data["id"], 7);
  CAF_CHECK_EQUAL(ev.back().data["result"]["structuredContent"]["stdout"],
                  "1\n2\n3\n");
}

CAF_TEST(a dropped stream resumes with Last - Event - ID and loses nothing) {
  auto sid = open();
  request r;
  r.method = "POST";
  r.path = "/mcp";
  r.headers = {"Content-Type: application/json", accept_both,
               "Mcp-Session-Id: " + sid};
  r.body = rpc(9, "tools/call",
               {{"name", "shell"},
                {"arguments",
                 {{"command", "for i in 1 2 3 4 5 6; do echo line$i; sleep "
                              "0.5; done"}}},
                {"_meta", {{"progressToken", 99}}}})
             .dump();
  r.has_body = true;
  // The client's connection drops after a second, mid-call.
  r.extra = {"--max-time", "1.2", "-N"};
  auto first = n.send(r);
  CAF_CHECK_EQUAL(first.curl_exit, 28);
  auto before = events_of(first.body);
  CAF_REQUIRE(before.size() >= 2);
  CAF_CHECK(!before.back().data.contains("result"));
  auto resumed = n.get("/mcp",
                       {"Accept: text/event-stream", "Mcp-Session-Id: " + sid,
                        "Last-Event-ID: " + before.back().id});
  CAF_CHECK_EQUAL(resumed.status, 200);
  auto after = events_of(resumed.body);
  CAF_REQUIRE(!after.empty());
  // One stream, its events numbered without a gap or a repeat.
  std::vector<sse_event> all = before;
  all.insert(all.end(), after.begin(), after.end());
  auto stream = all.front().id.substr(0, all.front().id.find('-'));
  for (size_t i = 0; i < all.size(); ++i)
    CAF_CHECK_EQUAL(all[i].id, stream + "-" + std::to_string(i));
  CAF_CHECK_EQUAL(after.back().data["id"], 9);
  CAF_CHECK_EQUAL(after.back().data["result"]["structuredContent"]["stdout"],
                  "line1\nline2\nline3\nline4\nline5\nline6\n");
  // Replaying from the priming event gives every later event again.
  auto again = n.get("/mcp", {"Mcp-Session-Id: " + sid,
                              "Last-Event-ID: " + stream + "-0"});
  CAF_CHECK_EQUAL(events_of(again.body).size(), all.size() - 1);
}

CAF_TEST(a session named by the client outlives its MCP session) {
  auto made = n.post("/v1/sessions", json::object());
  auto named = made.body_json()["id"].get<std::string>();
  auto sid = open({"X-Sandbox-Session: " + named});
  auto run = call(sid,
                  rpc(2, "tools/call",
                      {{"name", "shell"},
                       {"arguments", {{"command", "touch made-over-mcp"}}}}),
                  {"Accept: application/json"});
  CAF_CHECK_EQUAL(run.status, 200);
  auto st = n.get("/v1/sessions/" + named + "/stat/made-over-mcp");
  CAF_CHECK_EQUAL(st.status, 200);
  request del;
  del.method = "DELETE";
  del.path = "/mcp";
  del.headers = {"Mcp-Session-Id: " + sid};
  CAF_CHECK_EQUAL(n.send(del).status, 200);
  CAF_CHECK_EQUAL(n.get("/v1/sessions/" + named).status, 200);
  auto unknown = n.post("/mcp", rpc(1, "initialize", init_params()),
                        {accept_both, "X-Sandbox-Session: nope"});
  CAF_CHECK_EQUAL(unknown.status, 404);
}

CAF_TEST(what the transport refuses) {
  auto sid = open();
  auto no_id = n.post("/mcp", rpc(2, "ping"), {accept_both});
  CAF_CHECK_EQUAL(no_id.status, 400);
  auto unknown = n.post("/mcp", rpc(2, "ping"),
                        {accept_both, "Mcp-Session-Id: not-a-session"});
  CAF_CHECK_EQUAL(unknown.status, 404);
  auto version = n.post("/mcp", rpc(2, "ping"),
                        {accept_both, "Mcp-Session-Id: " + sid,
                         "MCP-Protocol-Version: 1999-01-01"});
  CAF_CHECK_EQUAL(version.status, 400);
  request garbage;
  garbage.method = "POST";
  garbage.path = "/mcp";
  garbage.headers = {"Content-Type: application/json", accept_both,
                     "Mcp-Session-Id: " + sid};
  garbage.body = "{not json";
  garbage.has_body = true;
  auto g = n.send(garbage);
  CAF_CHECK_EQUAL(g.status, 400);
  CAF_CHECK_EQUAL(g.body_json()["error"]["code"], -32700);
  // DNS rebinding: another site named in Origin or Host is refused.
  auto origin = call(sid, rpc(5, "ping"),
                     {accept_both, "Origin: http://evil.example"});
  CAF_CHECK_EQUAL(origin.status, 403);
  CAF_CHECK_EQUAL(origin.body_json()["code"], "forbidden_host");
  auto host = call(sid, rpc(6, "ping"), {accept_both, "Host: evil.example"});
  CAF_CHECK_EQUAL(host.status, 403);
  auto local = call(sid, rpc(7, "ping"),
                    {accept_both, "Origin: http://localhost:3000"});
  CAF_CHECK_EQUAL(local.status, 200);
  request put;
  put.method = "PUT";
  put.path = "/mcp";
  CAF_CHECK_EQUAL(n.send(put).status, 405);
  auto ping = call(sid, rpc(3, "ping"), {accept_both});
  CAF_CHECK_EQUAL(ping.status, 200);
  CAF_CHECK(ping.body_json()["result"].is_object());
  auto bad_tool = call(sid, rpc(4, "tools/call", {{"name", "nope"}}),
                       {accept_both});
  CAF_CHECK_EQUAL(bad_tool.status, 200);
  auto ev = events_of(bad_tool.body);
  CAF_REQUIRE_EQUAL(ev.size(), 2u);
  CAF_CHECK(ev[1].data.contains("error"));
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST(an idle MCP session ends with its sandbox session) {
  http_node n{{"--mcp-idle", "1"}};
  auto a = n.post("/mcp", rpc(1, "initialize", init_params()), {accept_both});
  auto sid = a.header("mcp-session-id");
  CAF_CHECK_EQUAL(n.get("/v1/sessions").body_json()["sessions"].size(), 1u);
  bool ended = false;
  for (int i = 0; i < 1500 && !ended; ++i) {
    ended = n.get("/v1/sessions").body_json()["sessions"].empty();
    if (!ended)
      std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  CAF_CHECK(ended);
  auto late = n.post("/mcp", rpc(2, "ping"),
                     {accept_both, "Mcp-Session-Id: " + sid});
  CAF_CHECK_EQUAL(late.status, 404);
}
