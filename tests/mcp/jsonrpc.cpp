#define CAF_SUITE mcp.jsonrpc
#include "caf/test/unit_test.hpp"
#include "helpers/check.hpp"

#include "fixture.hpp"

using namespace sandbox::test;
namespace mcp = sandbox::mcp;

CAF_TEST(malformed lines are parse errors with a null id and serving goes on) {
  fixture f;
  f.initialize();
  for (std::string line : {"{\"jsonrpc\":", "not json", "{\"a\":1}}",
                           "{'jsonrpc':'2.0'}", "[1,", "\x01\x02"}) {
    f.send_raw(line);
    auto r = f.out.next();
    CAF_CHECK_EQUAL(error_code(r), mcp::parse_error);
    CAF_CHECK(r["id"].is_null());
    CAF_CHECK_EQUAL(r["jsonrpc"], "2.0");
    CAF_CHECK(r["error"]["message"].get<std::string>().rfind("Parse error", 0)
              == 0);
  }
  auto pong = f.ping(1);
  CAF_CHECK_EQUAL(pong["id"], 1);
  CAF_CHECK_EQUAL(pong["result"], json::object());
}

CAF_TEST(blank lines are ignored) {
  fixture f;
  f.send_raw("");
  f.send_raw("   ");
  f.send_raw("\r");
  auto pong = f.ping(2);
  CAF_CHECK_EQUAL(pong["id"], 2);
  CAF_CHECK_EQUAL(f.out.waiting(), 0u);
}

CAF_TEST(a line ending in CR LF is one message) {
  fixture f;
  f.send_raw(R"({"jsonrpc":"2.0","id":3,"method":"ping"})"
             "\r");
  auto r = f.out.next();
  CAF_CHECK_EQUAL(r["id"], 3);
  CAF_CHECK(r.contains("result"));
}

CAF_TEST(messages that are not objects are invalid requests) {
  fixture f;
  f.initialize();
  for (std::string line : {"1", "\"ping\"", "null", "true", "2.5"}) {
    f.send_raw(line);
    auto r = f.out.next();
    CAF_CHECK_EQUAL(error_code(r), mcp::invalid_request);
    CAF_CHECK(r["id"].is_null());
  }
  CAF_CHECK_EQUAL(f.ping(4)["id"], 4);
}

CAF_TEST(invalid requests answer - 32600 with the id when it is valid) {
  fixture f;
  f.initialize();
  struct sample {
    std::string line;
    json id;
  };
  std::vector<sample> samples{
    {R"({"id":1,"method":"ping"})", 1},
    {R"({"jsonrpc":"1.0","id":"a","method":"ping"})", "a"},
    {R"({"jsonrpc":2.0,"id":2,"method":"ping"})", 2},
    {R"({"jsonrpc":"2.0","id":3})", 3},
    {R"({"jsonrpc":"2.0","id":4,"method":5})", 4},
    {R"({"jsonrpc":"2.0","id":5,"method":null})", 5},
    {R"({"jsonrpc":"2.0","id":6,"method":"ping","params":"x"})", 6},
    {R"({"jsonrpc":"2.0","id":7,"method":"ping","params":7})", 7},
    // An invalid message without an id is still answered (id null).
    {R"({"jsonrpc":"2.0","method":1,"params":"bar"})", nullptr},
    {R"({"jsonrpc":"2.0"})", nullptr},
    {R"({})", nullptr},
  };
  for (auto& s : samples) {
    CAF_MESSAGE("line: " << s.line);
    f.send_raw(s.line);
    auto r = f.out.next();
    CAF_CHECK_EQUAL(error_code(r), mcp::invalid_request);
    CAF_CHECK_EQUAL(r["id"], s.id);
  }
  CAF_CHECK_EQUAL(f.ping(8)["id"], 8);
}

CAF_TEST(ids that are neither strings nor integers are invalid requests) {
  fixture f;
  f.initialize();
  // MCP: "Requests MUST include a string or integer ID", not null.
  for (std::string id : {"null", "1.5", "1.0", "1e3", "true", "false", "{}",
                         "[1]", "{\"a\":1}"}) {
    f.send_raw(R"({"jsonrpc":"2.0","method":"ping","id":)" + id + "}");
    auto r = f.out.next();
    CAF_MESSAGE("id: " << id);
    CAF_CHECK_EQUAL(error_code(r), mcp::invalid_request);
    CAF_CHECK(r["id"].is_null());
  }
  CAF_CHECK_EQUAL(f.ping(9)["id"], 9);
}

CAF_TEST(ids of every allowed type are echoed exactly) {
  fixture f;
  f.initialize();
  // The id's JSON text in the request and in the response.
  for (std::string id : std::vector<std::string>{
         "0", "-1", "42", "9007199254740993", "-9223372036854775808",
         "18446744073709551615", "\"\"", "\"abc\"", "\"1\"",
         "\"\\u00e9\\u2713 \\\"quoted\\\"\"",
         "\"" + std::string(5000, 'x') + "\""}) {
    f.send_raw(R"({"jsonrpc":"2.0","method":"ping","id":)" + id + "}");
    auto r = f.out.next();
    CAF_REQUIRE(r.is_object());
    CAF_CHECK(r.contains("result"));
    CAF_CHECK_EQUAL(r["id"].dump(), json::parse(id).dump());
    // The id appears in the response line as it was sent (no rounding).
    if (id.size() < 100 && id.find('\\') == std::string::npos)
      CAF_CHECK(f.out.raw().find("\"id\":" + id) != std::string::npos);
  }
}

CAF_TEST(notifications never get a response) {
  fixture f;
  f.initialize();
  f.send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  f.send({{"jsonrpc", "2.0"}, {"method", "notifications/unknown"}});
  f.send({{"jsonrpc", "2.0"},
          {"method", "unknown/method"},
          {"params", json::object()}});
  f.send({{"jsonrpc", "2.0"}, {"method", "ping"}});
  f.send(f.cancelled(12345));
  f.send(f.cancelled("never-sent"));
  f.send({{"jsonrpc", "2.0"},
          {"method", "notifications/cancelled"},
          {"params", {{"reason", "no id"}}}});
  f.send({{"jsonrpc", "2.0"},
          {"method", "notifications/progress"},
          {"params", {{"progressToken", 1}, {"progress", 1}}}});
  // A tool call without an id: nobody waits for it, it does not run.
  f.send({{"jsonrpc", "2.0"},
          {"method", "tools/call"},
          {"params", {{"name", "echo"}, {"arguments", json::object()}}}});
  // A response to a request the server never sent.
  f.send({{"jsonrpc", "2.0"}, {"id", 77}, {"result", json::object()}});
  auto pong = f.ping("after");
  CAF_CHECK_EQUAL(pong["id"], "after");
  CAF_CHECK(f.tools.called().empty());
  f.srv->shutdown();
  CAF_CHECK_EQUAL(f.out.waiting(), 0u);
}

CAF_TEST(unknown methods answer - 32601) {
  fixture f;
  f.initialize();
  for (std::string method : {"resources/list", "prompts/get", "", "tools"}) {
    f.send(f.request(method + "-id", method));
    auto r = f.out.next();
    CAF_CHECK_EQUAL(error_code(r), mcp::method_not_found);
    CAF_CHECK_EQUAL(r["id"], method + "-id");
  }
  CAF_CHECK_EQUAL(f.ping(1)["id"], 1);
}

CAF_TEST(unknown tools and wrong argument types answer - 32602) {
  fixture f;
  f.initialize();
  struct sample {
    json params;
    std::string needle;
  };
  std::vector<sample> samples{
    {{{"name", "nope"}, {"arguments", json::object()}}, "Unknown tool"},
    {{{"arguments", json::object()}}, "params.name"},
    {{{"name", 5}}, "params.name"},
    {{{"name", "echo"}, {"arguments", json::array()}}, "must be an object"},
    {{{"name", "echo"}, {"arguments", "text"}}, "must be an object"},
    {{{"name", "echo"}, {"arguments", {{"text", 5}}}}, "text must be a string"},
    {json::array({"echo"}), "takes an object"},
  };
  int id = 100;
  for (auto& s : samples) {
    f.send(f.request(++id, "tools/call", s.params));
    auto r = f.out.next();
    CAF_MESSAGE("params: " << s.params.dump());
    CAF_CHECK_EQUAL(error_code(r), mcp::invalid_params);
    CAF_CHECK_EQUAL(r["id"], id);
    CAF_CHECK(r["error"]["message"].get<std::string>().find(s.needle)
              != std::string::npos);
  }
  // The unknown tool's message lists the tools.
  f.send(f.call("u", "nope", json::object()));
  auto r = f.out.next();
  CAF_CHECK(
    r["error"]["message"].get<std::string>().find("echo, fail, broken, slow")
    != std::string::npos);
  // Missing arguments are an empty object.
  f.send(f.request("noargs", "tools/call", {{"name", "echo"}}));
  r = f.out.next();
  CAF_CHECK_EQUAL(r["result"]["content"][0]["text"], "{}");
  CAF_CHECK_EQUAL(f.ping(1)["id"], 1);
}

CAF_TEST(initialize answers the client version when supported) {
  for (std::string v :
       {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}) {
    fixture f;
    auto r = f.initialize(v);
    CAF_CHECK_EQUAL(r["id"], 0);
    CAF_CHECK_EQUAL(r["result"]["protocolVersion"], v);
    CAF_CHECK_EQUAL(r["result"]["serverInfo"]["name"], "sandbox");
    CAF_CHECK_EQUAL(r["result"]["serverInfo"]["version"], "9.9.9");
    CAF_CHECK(r["result"]["capabilities"]["tools"].is_object());
    CAF_CHECK_EQUAL(f.srv->protocol_version(), v);
  }
  for (std::string v : {"2099-01-01", "2026-07-28", "1.0", ""}) {
    fixture f;
    auto r = f.initialize(v);
    CAF_CHECK_EQUAL(r["result"]["protocolVersion"], "2025-11-25");
  }
}

CAF_TEST(initialize needs a version and comes once) {
  fixture f;
  f.send(f.request(1, "initialize", json::object()));
  CAF_CHECK_EQUAL(error_code(f.out.next()), mcp::invalid_params);
  f.send(f.request(2, "initialize", {{"protocolVersion", 20250618}}));
  CAF_CHECK_EQUAL(error_code(f.out.next()), mcp::invalid_params);
  CAF_CHECK_EQUAL(f.srv->protocol_version(), "");
  f.initialize("2025-03-26");
  f.send(f.request(3, "initialize", {{"protocolVersion", "2025-06-18"}}));
  auto r = f.out.next();
  CAF_CHECK_EQUAL(error_code(r), mcp::invalid_request);
  CAF_CHECK_EQUAL(r["id"], 3);
  CAF_CHECK_EQUAL(f.srv->protocol_version(), "2025-03-26");
}

CAF_TEST(ping and tools list) {
  fixture f;
  f.initialize();
  auto r = f.ping(1);
  CAF_CHECK_EQUAL(r["result"], json::object());
  f.send(f.request(2, "tools/list"));
  r = f.out.next();
  auto& tools = r["result"]["tools"];
  CAF_REQUIRE_EQUAL(tools.size(), 4u);
  CAF_CHECK_EQUAL(tools[0]["name"], "echo");
  CAF_CHECK_EQUAL(tools[0]["description"], "Answers its arguments.");
  CAF_CHECK_EQUAL(tools[0]["inputSchema"]["type"], "object");
  CAF_CHECK_EQUAL(tools[3]["name"], "slow");
  // A cursor is accepted (one page holds every tool).
  f.send(f.request(3, "tools/list", {{"cursor", "x"}}));
  CAF_CHECK_EQUAL(f.out.next()["result"]["tools"].size(), 4u);
}

CAF_TEST(tool results carry text structured content and isError) {
  {
    fixture f;
    f.initialize("2025-06-18");
    f.send(f.call(1, "echo", {{"text", "hi"}}));
    auto r = f.out.next();
    CAF_CHECK_EQUAL(r["id"], 1);
    CAF_CHECK_EQUAL(r["result"]["content"][0]["type"], "text");
    CAF_CHECK_EQUAL(r["result"]["content"][0]["text"], R"({"text":"hi"})");
    CAF_CHECK_EQUAL(r["result"]["structuredContent"]["args"]["text"], "hi");
    CAF_CHECK_EQUAL(r["result"]["isError"], false);
    f.send(f.call(2, "fail", json::object()));
    r = f.out.next();
    CAF_CHECK_EQUAL(r["result"]["isError"], true);
    CAF_CHECK_EQUAL(r["result"]["content"][0]["text"], "it failed");
    f.send(f.call(3, "broken", json::object()));
    r = f.out.next();
    CAF_CHECK_EQUAL(r["result"]["isError"], true);
    CAF_CHECK_EQUAL(r["result"]["content"][0]["text"],
                    "io_error: disk on fire");
  }
  {
    // structuredContent came with 2025-06-18.
    fixture f;
    f.initialize("2025-03-26");
    f.send(f.call(1, "echo", {{"text", "hi"}}));
    auto r = f.out.next();
    CAF_CHECK(!r["result"].contains("structuredContent"));
    CAF_CHECK_EQUAL(r["result"]["isError"], false);
  }
}

CAF_TEST(under 2025 - 11 - 25 tools carry more
         and bad arguments fail the tool) {
  fixture f;
  f.initialize("2025-11-25");
  f.send(f.request(1, "tools/list"));
  auto r = f.out.next();
  auto& echo = r["result"]["tools"][0];
  CAF_CHECK_EQUAL(echo["title"], "Echo");
  CAF_CHECK_EQUAL(echo["annotations"]["readOnlyHint"], true);
  CAF_CHECK_EQUAL(echo["outputSchema"]["type"], "object");
  // A tool without them lists none.
  CAF_CHECK(!r["result"]["tools"][1].contains("outputSchema"));
  f.send(f.call(2, "echo", {{"text", 42}}));
  r = f.out.next();
  CAF_CHECK_EQUAL(r["result"]["isError"], true);
  CAF_CHECK_EQUAL(r["result"]["content"][0]["text"],
                  "echo: text must be a string");
  CAF_CHECK_EQUAL(r["result"]["structuredContent"]["error"],
                  "invalid_argument");
  CAF_CHECK_EQUAL(
    json::parse(r["result"]["content"][1]["text"].get<std::string>()),
    r["result"]["structuredContent"]);
  // An unknown tool is still a protocol error.
  f.send(f.call(3, "nope", json::object()));
  CAF_CHECK_EQUAL(error_code(f.out.next()), mcp::invalid_params);
  // Under 2025-06-18, the same bad arguments are a protocol error.
  fixture old;
  old.initialize("2025-06-18");
  old.send(old.call(1, "echo", {{"text", 42}}));
  CAF_CHECK_EQUAL(error_code(old.out.next()), mcp::invalid_params);
  old.send(old.request(2, "tools/list"));
  r = old.out.next();
  CAF_CHECK(!r["result"]["tools"][0].contains("outputSchema"));
  CAF_CHECK_EQUAL(r["result"]["tools"][0]["title"], "Echo");
}

CAF_TEST(an id in use by a running call is refused) {
  fixture f;
  f.initialize();
  f.send(f.call(5, "slow", json::object()));
  CAF_REQUIRE(f.tools.wait_started(1));
  f.send(f.call(5, "echo", json::object()));
  auto r = f.out.next();
  CAF_CHECK_EQUAL(error_code(r), mcp::invalid_request);
  CAF_CHECK_EQUAL(r["id"], 5);
  // "5" is another id.
  f.send(f.call("5", "echo", json::object()));
  r = f.out.next();
  CAF_CHECK_EQUAL(r["id"], "5");
  CAF_CHECK(r.contains("result"));
  f.tools.release();
  r = f.out.next();
  CAF_CHECK_EQUAL(r["id"], 5);
  CAF_CHECK_EQUAL(r["result"]["content"][0]["text"], "done");
}

CAF_TEST(batches are refused under 2025 - 06 - 18 and 2024 - 11 - 05) {
  for (std::string v : {"2025-06-18", "2024-11-05", ""}) {
    fixture f;
    if (!v.empty())
      f.initialize(v);
    f.send_raw(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
               R"({"jsonrpc":"2.0","id":2,"method":"tools/call",)"
               R"("params":{"name":"echo"}}])");
    auto r = f.out.next();
    CAF_MESSAGE("version: " << (v.empty() ? "none" : v));
    CAF_CHECK(r.is_object());
    CAF_CHECK_EQUAL(error_code(r), mcp::invalid_request);
    CAF_CHECK(r["id"].is_null());
    CAF_CHECK(r["error"]["message"].get<std::string>().find("batch")
              != std::string::npos);
    // None of its members ran, and serving goes on.
    CAF_CHECK_EQUAL(f.ping("p")["id"], "p");
    CAF_CHECK(f.tools.called().empty());
  }
}

CAF_TEST(batches are answered with one array under 2025 - 03 - 26) {
  fixture f;
  f.initialize("2025-03-26");
  f.send_raw(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
             R"({"jsonrpc":"2.0","method":"notifications/initialized"},)"
             R"({"jsonrpc":"2.0","id":"b","method":"tools/call",)"
             R"("params":{"name":"echo","arguments":{"text":"x"}}},)"
             R"({"jsonrpc":"2.0","id":3,"method":"nope"},)"
             R"(42])");
  auto r = f.out.next();
  CAF_REQUIRE(r.is_array());
  CAF_REQUIRE_EQUAL(r.size(), 4u);
  std::map<std::string, json> by_id;
  for (auto& m : r)
    by_id[m["id"].dump()] = m;
  CAF_CHECK_EQUAL(by_id["1"]["result"], json::object());
  CAF_CHECK_EQUAL(by_id["\"b\""]["result"]["content"][0]["text"],
                  R"({"text":"x"})");
  CAF_CHECK_EQUAL(error_code(by_id["3"]), mcp::method_not_found);
  CAF_CHECK_EQUAL(error_code(by_id["null"]), mcp::invalid_request);
  // An empty batch: one error, not an array.
  f.send_raw("[]");
  r = f.out.next();
  CAF_CHECK(r.is_object());
  CAF_CHECK_EQUAL(error_code(r), mcp::invalid_request);
  // Invalid members: one error each.
  f.send_raw("[1,2,3]");
  r = f.out.next();
  CAF_REQUIRE(r.is_array());
  CAF_CHECK_EQUAL(r.size(), 3u);
  for (auto& m : r)
    CAF_CHECK_EQUAL(error_code(m), mcp::invalid_request);
  // Nothing but notifications: no answer at all.
  f.send_raw(R"([{"jsonrpc":"2.0","method":"notifications/initialized"},)"
             R"({"jsonrpc":"2.0","method":"notifications/cancelled",)"
             R"("params":{"requestId":99}}])");
  CAF_CHECK_EQUAL(f.ping("after")["id"], "after");
}

CAF_TEST(a cancelled call is left out of its batch) {
  fixture f;
  f.initialize("2025-03-26");
  f.send_raw(R"([{"jsonrpc":"2.0","id":1,"method":"tools/call",)"
             R"("params":{"name":"slow"}},)"
             R"({"jsonrpc":"2.0","id":2,"method":"ping"}])");
  CAF_REQUIRE(f.tools.wait_started(1));
  // The batch waits for its call.
  CAF_CHECK_EQUAL(f.ping("p")["id"], "p");
  f.send(f.cancelled(1));
  auto r = f.out.next();
  CAF_REQUIRE(r.is_array());
  CAF_REQUIRE_EQUAL(r.size(), 1u);
  CAF_CHECK_EQUAL(r[0]["id"], 2);
}
