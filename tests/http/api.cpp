// http.api: the JSON API under /v1, route by route with curl against a
// `sandbox serve --http` node (docs/http.md); the last test checks that
// the routes hit here are exactly the OpenAPI document's.

#define CAF_SUITE http.api
#include "caf/test/dsl.hpp"

#include <chrono>
#include <random>
#include <thread>

#include "helpers/check.hpp"
#include "http_fixture.hpp"

using namespace sandbox::test;

namespace {

/// One node for the whole suite: each test makes sessions of its own.
http_node& node() {
  static http_node n;
  return n;
}

std::string sessions_path(const std::string& id, const std::string& rest) {
  return "/v1/sessions/" + id + rest;
}

/// Waits (polling, up to 30 s) until `pred` holds.
template <class F>
bool eventually(F pred) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  while (std::chrono::steady_clock::now() < until) {
    if (pred())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  return pred();
}

} // namespace

CAF_TEST(sessions are created listed described and stopped) {
  auto& n = node();
  auto a = n.post("/v1/sessions", {{"env", {{"GREETING", "hello"}}}});
  CAF_REQUIRE_EQUAL(a.status, 201);
  auto s = a.body_json();
  CAF_CHECK_EQUAL(s["type"], "session");
  auto id = s["id"].get<std::string>();
  CAF_CHECK_EQUAL(a.header("location"), "/v1/sessions/" + id);
  CAF_CHECK(s["port"].get<int>() > 0);
  auto list = n.get("/v1/sessions");
  CAF_CHECK_EQUAL(list.status, 200);
  bool listed = false;
  auto all = list.body_json();
  for (auto& x : all["sessions"])
    listed = listed || x["id"] == id;
  CAF_CHECK(listed);
  auto info = n.get(sessions_path(id, ""));
  CAF_CHECK_EQUAL(info.status, 200);
  CAF_CHECK_EQUAL(info.body_json()["working_directory"],
                  s["working_directory"]);
  auto env = n.post(sessions_path(id, "/exec"),
                    {{"command", "printf %s \"$GREETING\""}});
  CAF_CHECK_EQUAL(env.body_json()["stdout"], "hello");
  auto stop = n.del(sessions_path(id, ""));
  CAF_CHECK_EQUAL(stop.status, 200);
  CAF_CHECK_EQUAL(stop.body_json()["type"], "stopped");
  auto gone = n.get(sessions_path(id, ""));
  CAF_CHECK_EQUAL(gone.status, 404);
  CAF_CHECK_EQUAL(gone.body_json()["code"], "session_not_found");
  CAF_CHECK_EQUAL(n.del(sessions_path(id, "")).status, 404);
  auto bad = n.post("/v1/sessions", {{"isolation", "sideways"}});
  CAF_CHECK_EQUAL(bad.status, 400);
  CAF_CHECK_EQUAL(bad.body_json()["code"], "invalid_argument");
  CAF_CHECK(bad.body_json()["message"].get<std::string>().find("isolation")
            != std::string::npos);
}

CAF_TEST(exec answers one result object with the output) {
  auto& n = node();
  auto id = n.new_session();
  auto a = n.post(sessions_path(id, "/exec"),
                  {{"command", "echo out; echo err >&2; exit 3"}});
  CAF_REQUIRE_EQUAL(a.status, 200);
  auto r = a.body_json();
  CAF_CHECK_EQUAL(r["type"], "result");
  CAF_CHECK_EQUAL(r["exit_code"], 3);
  CAF_CHECK_EQUAL(r["exit_reason"], "exited");
  CAF_CHECK_EQUAL(r["stdout"], "out\n");
  CAF_CHECK_EQUAL(r["stderr"], "err\n");
  // Bytes that are not UTF-8 travel as base64.
  auto bin = n.post(sessions_path(id, "/exec"),
                    {{"command", "printf '\\377\\376'"}});
  CAF_CHECK_EQUAL(bin.body_json()["stdout_b64"], "//4=");
  auto slow = n.post(sessions_path(id, "/exec"),
                     {{"command", "sleep 30"}, {"timeout", 0.2}});
  CAF_CHECK_EQUAL(slow.body_json()["exit_reason"], "timeout");
  auto cwd = n.post(sessions_path(id, "/exec"),
                    {{"command", "pwd"}, {"cwd", "no/such/dir"}});
  CAF_CHECK_EQUAL(cwd.status, 404);
  CAF_CHECK_EQUAL(cwd.body_json()["code"], "path_not_found");
  auto code = n.post(sessions_path(id, "/code"),
                     {{"language", "python"},
                      {"code", "import sys\nprint(6*7)\nsys.exit(2)"}});
  CAF_CHECK_EQUAL(code.status, 200);
  CAF_CHECK_EQUAL(code.body_json()["stdout"], "42\n");
  CAF_CHECK_EQUAL(code.body_json()["exit_code"], 2);
}

CAF_TEST(exec streams chunk lines then the result as NDJSON) {
  auto& n = node();
  auto id = n.new_session();
  auto a = n.post(sessions_path(id, "/exec"),
                  {{"command", "for i in 1 2 3; do echo $i; done; exit 4"}},
                  {"Accept: application/x-ndjson"});
  CAF_REQUIRE_EQUAL(a.status, 200);
  CAF_CHECK_EQUAL(a.header("content-type"), "application/x-ndjson");
  auto lines = a.lines();
  CAF_REQUIRE(lines.size() >= 2);
  std::string out;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    CAF_CHECK_EQUAL(lines[i]["type"], "chunk");
    out += lines[i]["data"].get<std::string>();
  }
  CAF_CHECK_EQUAL(out, "1\n2\n3\n");
  CAF_CHECK_EQUAL(lines.back()["type"], "result");
  CAF_CHECK_EQUAL(lines.back()["exit_code"], 4);
  CAF_CHECK(!lines.back().contains("stdout"));
  // An error before any output is the request's status, not a line.
  auto bad = n.post(sessions_path(id, "/code"),
                    {{"language", "no such language!"}, {"code", "x"}},
                    {"Accept: application/x-ndjson"});
  CAF_CHECK_EQUAL(bad.status, 400);
  CAF_CHECK_EQUAL(bad.body_json()["code"], "invalid_argument");
  auto code = n.post(sessions_path(id, "/code"),
                     {{"language", "bash"}, {"code", "echo from-code"}},
                     {"Accept: application/x-ndjson"});
  CAF_CHECK_EQUAL(code.lines().front()["data"], "from-code\n");
}

CAF_TEST(a silent stream says heartbeat lines) {
  http_node n{{"--http-heartbeat", "0.2"}};
  auto id = n.new_session();
  auto a = n.post(sessions_path(id, "/exec"),
                  {{"command", "sleep 1; echo done"}},
                  {"Accept: application/x-ndjson"});
  CAF_REQUIRE_EQUAL(a.status, 200);
  auto lines = a.lines();
  CAF_REQUIRE(lines.size() >= 3);
  CAF_CHECK_EQUAL(lines.front()["type"], "heartbeat");
  CAF_CHECK_EQUAL(lines[lines.size() - 2]["data"], "done\n");
  CAF_CHECK_EQUAL(lines.back()["type"], "result");
}

CAF_TEST(a client that goes away cancels its command) {
  auto& n = node();
  auto id = n.new_session();
  request r;
  r.method = "POST";
  r.path = sessions_path(id, "/exec");
  r.headers = {"Content-Type: application/json",
               "Accept: application/x-ndjson"};
  r.body = json{{"command", "echo started; exec sleep 600"}}.dump();
  r.has_body = true;
  // curl gives up after its first second: the node sees the connection
  // close and cancels the command.
  r.extra = {"--max-time", "1"};
  auto a = n.send(r);
  CAF_CHECK_EQUAL(a.curl_exit, 28);
  CAF_CHECK(a.body.find("started") != std::string::npos);
  CAF_CHECK(eventually([&] {
    auto info = n.get(sessions_path(id, ""));
    return info.body_json()["children"] == 0;
  }));
}

CAF_TEST(processes start read write signal and resize) {
  auto& n = node();
  auto id = n.new_session();
  auto start = n.post(sessions_path(id, "/processes"),
                      {{"command", "cat"}, {"stdin", true}});
  CAF_REQUIRE_EQUAL(start.status, 201);
  auto p = start.body_json();
  CAF_CHECK_EQUAL(p["type"], "process");
  CAF_CHECK_EQUAL(p["state"], "running");
  auto pid = p["id"].get<std::string>();
  request w;
  w.method = "POST";
  w.path = sessions_path(id, "/processes/" + pid + "/stdin?eof=1");
  w.headers = {"Content-Type: application/octet-stream"};
  w.body = "line one\n";
  w.has_body = true;
  auto wrote = n.send(w);
  CAF_CHECK_EQUAL(wrote.status, 200);
  auto out = n.get(
    sessions_path(id, "/processes/" + pid + "/output?offset=0&wait=10"));
  CAF_REQUIRE_EQUAL(out.status, 200);
  auto o = out.body_json();
  CAF_CHECK_EQUAL(o["type"], "output");
  CAF_REQUIRE(!o["chunks"].empty());
  CAF_CHECK_EQUAL(o["chunks"][0]["data"], "line one\n");
  CAF_CHECK_EQUAL(o["next_offset"], 9);
  // Read from an offset; the end of a process that has exited says so.
  CAF_CHECK(eventually([&] {
    auto more = n.get(
      sessions_path(id, "/processes/" + pid + "/output?offset=5&wait=1"));
    auto m = more.body_json();
    return m["running"] == false && m["exit_code"] == 0
           && m["chunks"][0]["data"] == "one\n";
  }));
  auto list = n.get(sessions_path(id, "/processes"));
  CAF_CHECK_EQUAL(list.body_json()["processes"][0]["id"], pid);
  // A terminal: its size, resized, seen by the command.
  auto tty = n.post(sessions_path(id, "/processes"),
                    {{"command", "trap 'stty size' WINCH; stty size; "
                                 "while :; do sleep 0.05; done"},
                     {"tty", true},
                     {"rows", 30},
                     {"cols", 90}});
  CAF_REQUIRE_EQUAL(tty.status, 201);
  auto tid = tty.body_json()["id"].get<std::string>();
  CAF_CHECK(eventually([&] {
    auto r = n.get(sessions_path(id, "/processes/" + tid + "/output?wait=1"));
    auto c = r.body_json()["chunks"];
    return !c.empty()
           && c[0]["data"].get<std::string>().find("30 90")
                != std::string::npos;
  }));
  auto resized = n.post(sessions_path(id, "/processes/" + tid + "/resize"),
                        {{"rows", 12}, {"cols", 34}});
  CAF_CHECK_EQUAL(resized.status, 200);
  CAF_CHECK(eventually([&] {
    auto r = n.get(sessions_path(id, "/processes/" + tid + "/output?wait=1"));
    std::string all;
    auto o = r.body_json();
    for (auto& c : o["chunks"])
      all += c["data"].get<std::string>();
    return all.find("12 34") != std::string::npos;
  }));
  auto bad = n.post(sessions_path(id, "/processes/" + tid + "/signal"),
                    {{"signal", "NOPE"}});
  CAF_CHECK_EQUAL(bad.status, 400);
  auto killed = n.post(sessions_path(id, "/processes/" + tid + "/signal"),
                       {{"signal", "KILL"}});
  CAF_CHECK_EQUAL(killed.status, 200);
  CAF_CHECK(eventually([&] {
    auto r = n.get(sessions_path(id, "/processes/" + tid + "/output?wait=1"));
    return r.body_json()["running"] == false
           && r.body_json()["exit_reason"] == "signalled";
  }));
  auto by_number = n.post(sessions_path(id, "/processes"),
                          {{"command", "sleep 600"}});
  auto sid = by_number.body_json()["id"].get<std::string>();
  CAF_CHECK_EQUAL(n.post(sessions_path(id, "/processes/" + sid + "/signal"),
                         {{"signal", 15}})
                    .status,
                  200);
  auto unknown = n.get(sessions_path(id, "/processes/p-99/output"));
  CAF_CHECK_EQUAL(unknown.status, 404);
  CAF_CHECK_EQUAL(unknown.body_json()["code"], "process_not_found");
}

CAF_TEST(files go in and out whole with versions and preconditions) {
  auto& n = node();
  auto id = n.new_session();
  auto put = n.put(sessions_path(id, "/files/dir/a.txt"), "one\ntwo\nthree\n");
  CAF_REQUIRE_EQUAL(put.status, 200);
  auto w = put.body_json();
  CAF_CHECK_EQUAL(w["type"], "written");
  CAF_CHECK_EQUAL(w["bytes"], 14);
  auto version = w["version"].get<std::string>();
  auto get = n.get(sessions_path(id, "/files/dir/a.txt"));
  CAF_CHECK_EQUAL(get.status, 200);
  CAF_CHECK_EQUAL(get.body, "one\ntwo\nthree\n");
  CAF_CHECK_EQUAL(get.header("etag"), "\"" + version + "\"");
  auto lines = n.get(sessions_path(id, "/files/dir/a.txt?start_line=2&"
                                       "end_line=2"));
  CAF_CHECK_EQUAL(lines.body, "two\n");
  // Compare and swap: the old version fails, the current one wins once.
  auto stale = n.put(sessions_path(id, "/files/dir/a.txt"), "x",
                     {"If-Match: \"not-the-version\""});
  CAF_CHECK_EQUAL(stale.status, 412);
  CAF_CHECK_EQUAL(stale.body_json()["code"], "precondition_failed");
  auto cas = n.put(sessions_path(id, "/files/dir/a.txt"), "new",
                   {"If-Match: \"" + version + "\""});
  CAF_CHECK_EQUAL(cas.status, 200);
  auto again = n.put(sessions_path(id, "/files/dir/a.txt"), "newer",
                     {"If-Match: \"" + version + "\""});
  CAF_CHECK_EQUAL(again.status, 412);
  CAF_CHECK_EQUAL(n.get(sessions_path(id, "/files/dir/a.txt")).body, "new");
  auto exists = n.put(sessions_path(id, "/files/dir/a.txt"), "x",
                      {"If-None-Match: *"});
  CAF_CHECK_EQUAL(exists.status, 412);
  auto fresh = n.put(sessions_path(id, "/files/dir/b.txt"), "b",
                     {"If-None-Match: *"});
  CAF_CHECK_EQUAL(fresh.status, 200);
  // A large file, streamed both ways, byte for byte.
  std::string big(6u << 20, '\0');
  std::mt19937 rng{42};
  for (auto& c : big)
    c = static_cast<char>(rng());
  CAF_CHECK_EQUAL(n.put(sessions_path(id, "/files/big.bin"), big).status, 200);
  auto back = n.get(sessions_path(id, "/files/big.bin"));
  CAF_CHECK(back.body == big);
  auto dir = n.get(sessions_path(id, "/files/dir"));
  CAF_CHECK_EQUAL(dir.status, 422);
  CAF_CHECK_EQUAL(dir.body_json()["code"], "not_a_regular_file");
  auto removed = n.del(sessions_path(id, "/files/dir/b.txt"));
  CAF_CHECK_EQUAL(removed.status, 200);
  CAF_CHECK_EQUAL(removed.body_json()["type"], "removed");
  auto missing = n.get(sessions_path(id, "/files/dir/b.txt"));
  CAF_CHECK_EQUAL(missing.status, 404);
  CAF_CHECK_EQUAL(missing.body_json()["code"], "path_not_found");
}

CAF_TEST(list streams entries then done and stat describes a path) {
  auto& n = node();
  auto id = n.new_session();
  n.put(sessions_path(id, "/files/t/x/y.txt"), "y");
  n.put(sessions_path(id, "/files/t/z.txt"), "zz");
  auto l = n.get(sessions_path(id, "/list/t?depth=2"));
  CAF_REQUIRE_EQUAL(l.status, 200);
  auto lines = l.lines();
  CAF_REQUIRE_EQUAL(lines.size(), 4u);
  CAF_CHECK_EQUAL(lines[0]["path"], "x");
  CAF_CHECK_EQUAL(lines[0]["kind"], "dir");
  CAF_CHECK_EQUAL(lines[1]["path"], "x/y.txt");
  CAF_CHECK_EQUAL(lines[2]["path"], "z.txt");
  CAF_CHECK_EQUAL(lines[2]["size"], 2);
  CAF_CHECK_EQUAL(lines[3]["type"], "done");
  CAF_CHECK_EQUAL(lines[3]["count"], 3);
  CAF_CHECK(lines[3]["error"].is_null());
  // The working directory itself.
  auto top = n.get(sessions_path(id, "/list"));
  CAF_CHECK_EQUAL(top.lines()[0]["path"], "t");
  auto st = n.get(sessions_path(id, "/stat/t/z.txt"));
  CAF_CHECK_EQUAL(st.status, 200);
  CAF_CHECK_EQUAL(st.body_json()["kind"], "file");
  CAF_CHECK_EQUAL(st.body_json()["size"], 2);
  auto none = n.get(sessions_path(id, "/stat/t/none"));
  CAF_CHECK_EQUAL(none.status, 404);
  auto deep = n.get(sessions_path(id, "/list/t?depth=x"));
  CAF_CHECK_EQUAL(deep.status, 400);
}

CAF_TEST(malformed requests get the status that names what is wrong) {
  auto& n = node();
  auto id = n.new_session();
  auto route = n.get("/v1/nothing");
  CAF_CHECK_EQUAL(route.status, 404);
  CAF_CHECK_EQUAL(route.body_json()["type"], "error");
  CAF_CHECK_EQUAL(route.body_json()["code"], "not_found");
  request patch;
  patch.method = "PATCH";
  patch.path = sessions_path(id, "");
  auto method = n.send(patch);
  CAF_CHECK_EQUAL(method.status, 405);
  CAF_CHECK_EQUAL(method.header("allow"), "GET, DELETE");
  request bad_json;
  bad_json.method = "POST";
  bad_json.path = sessions_path(id, "/exec");
  bad_json.headers = {"Content-Type: application/json"};
  bad_json.body = "{\"command\": ";
  bad_json.has_body = true;
  CAF_CHECK_EQUAL(n.send(bad_json).status, 400);
  bad_json.body = "{\"command\": \"\xff\"}";
  CAF_CHECK_EQUAL(n.send(bad_json).status, 400);
  bad_json.body = "[1,2]";
  CAF_CHECK_EQUAL(n.send(bad_json).status, 400);
  request text;
  text.method = "POST";
  text.path = sessions_path(id, "/exec");
  text.headers = {"Content-Type: text/plain"};
  text.body = "echo hi";
  text.has_body = true;
  CAF_CHECK_EQUAL(n.send(text).status, 415);
  auto missing = n.post(sessions_path(id, "/exec"), json::object());
  CAF_CHECK_EQUAL(missing.status, 400);
  CAF_CHECK(missing.body_json()["message"].get<std::string>().find("command")
            != std::string::npos);
  auto typo = n.post(sessions_path(id, "/exec"),
                     {{"command", "true"}, {"comand", "x"}});
  CAF_CHECK_EQUAL(typo.status, 400);
  CAF_CHECK(typo.body_json()["message"].get<std::string>().find("comand")
            != std::string::npos);
  auto big = n.post(sessions_path(id, "/exec"),
                    {{"command", std::string(2u << 20, 'x')}});
  CAF_CHECK_EQUAL(big.status, 413);
  CAF_CHECK_EQUAL(big.body_json()["code"], "too_large");
}

CAF_TEST(the OpenAPI document names exactly the routes the suites hit) {
  auto& n = node();
  auto a = n.get("/v1/openapi.json");
  CAF_REQUIRE_EQUAL(a.status, 200);
  auto doc = a.body_json();
  CAF_REQUIRE(doc.is_object());
  CAF_CHECK_EQUAL(doc["openapi"].get<std::string>().substr(0, 3), "3.1");
  std::set<std::string> documented;
  for (auto& [path, item] : doc["paths"].items())
    for (auto& [method, op] : item.items()) {
      if (method == "parameters")
        continue;
      std::string m = method;
      for (auto& c : m)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      documented.insert(m + " " + path);
    }
  auto& hit = routes_hit();
  for (auto& r : documented)
    CHECK_THAT(hit.count(r) == 1, "documented, not hit: " + r);
  for (auto& r : hit)
    CHECK_THAT(documented.count(r) == 1, "hit, not documented: " + r);
}
