#include "mcp_http.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <future>
#include <set>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <caf/send.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ask.hpp"
#include "mcp/calls.hpp"
#include "mcp/jsonrpc.hpp"
#include "mcp/session_tools.hpp"
#include "sandbox/uuid.hpp"
#include "sandbox/validation.hpp"

namespace sandbox::http {

namespace net = boost::asio;

namespace {

/// The largest body of a POST to /mcp (a file_editor call carries a
/// file's content).
constexpr size_t max_mcp_body = 16u << 20;

/// Finished SSE streams an MCP session keeps for replay.
constexpr size_t kept_streams = 32;

using rpc_json = mcp::jsonrpc::json;

std::string sse_event(uint64_t stream, uint64_t seq, const std::string& line) {
  return fmt::format("id: {}-{}\ndata: {}\n\n", stream, seq, line);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

/// A JSON-RPC error answered at the HTTP level (no MCP session reads it).
void rpc_fail(const exchange_ptr& ex, status s, int code,
              const std::string& message) {
  rpc_json j{{"jsonrpc", "2.0"},
             {"id", nullptr},
             {"error", {{"code", code}, {"message", message}}}};
  ex->reply_bytes(s, "application/json", mcp::jsonrpc::dump(j) + "\n");
}

/// The answers to the requests of one POST: an SSE stream (with the
/// progress of its calls) or one JSON response.
struct stream {
  uint64_t id = 0;
  bool sse = false;
  /// Answers still to come (a batch's answer is one).
  size_t pending = 0;
  /// SSE: every event so far, for a client that resumes.
  std::vector<std::pair<uint64_t, std::string>> events;
  uint64_t next_seq = 1;
  /// JSON: the answer lines.
  std::vector<std::string> answers;
  /// The connection that gets the stream now; null while none does.
  exchange_ptr live;
  fields extra;
  bool done = false;
  std::vector<std::string> tokens;
};

} // namespace

struct mcp_endpoint::session {
  session(api_context& api, std::shared_ptr<mcp::call_executors> exec)
    : serial(net::make_strand(exec->pools->ticker.get_executor())),
      exec(std::move(exec)) {
    (void) api;
  }

  std::string id;
  std::string identity;
  std::string sandbox_id;
  /// The sandbox session was made for this MCP session (and ends with it).
  bool owned = false;
  std::unique_ptr<actors::blocking_session> facade;
  std::unique_ptr<mcp::session_tools> tools;
  std::unique_ptr<mcp::server> server;
  /// Messages are read one at a time, in order, here.
  net::strand<net::thread_pool::executor_type> serial;
  std::shared_ptr<mcp::call_executors> exec;
  std::atomic<int64_t> last_used{now_ns()};

  std::mutex mtx;
  std::map<uint64_t, std::shared_ptr<stream>> streams;
  std::deque<uint64_t> finished;
  std::map<std::string, std::shared_ptr<stream>> by_request;
  std::map<std::string, std::shared_ptr<stream>> by_token;
  exchange_ptr standalone;
  uint64_t standalone_seq = 0;
  uint64_t next_stream = 1;
  bool ended = false;

  /// Every message of the server for the client.
  void route(const std::string& line) {
    auto j = rpc_json::parse(line, nullptr, false);
    std::lock_guard<std::mutex> guard{mtx};
    std::shared_ptr<stream> st;
    bool answer = false;
    auto take = [&](const rpc_json& id) {
      auto i = by_request.find(mcp::jsonrpc::dump(id));
      if (i == by_request.end())
        return;
      st = i->second;
      by_request.erase(i);
      answer = true;
    };
    if (j.is_array()) {
      for (auto& e : j)
        if (e.is_object() && e.contains("id"))
          take(e["id"]);
    } else if (j.is_object() && j.contains("id")
               && (j.contains("result") || j.contains("error"))) {
      take(j["id"]);
    } else if (j.is_object()
               && j.value("method", "") == "notifications/progress"
               && j.contains("params") && j["params"].is_object()
               && j["params"].contains("progressToken")) {
      if (auto i
          = by_token.find(mcp::jsonrpc::dump(j["params"]["progressToken"]));
          i != by_token.end())
        st = i->second;
    }
    if (!st) {
      if (standalone)
        standalone->write(sse_event(0, ++standalone_seq, line), nullptr);
      return;
    }
    if (answer && st->pending > 0)
      --st->pending;
    bool last = answer && st->pending == 0;
    if (st->sse) {
      auto seq = st->next_seq++;
      auto text = sse_event(st->id, seq, line);
      st->events.emplace_back(seq, text);
      if (st->live)
        st->live->write(std::move(text), nullptr);
    } else if (answer) {
      st->answers.push_back(line);
    }
    if (last)
      finish(st);
  }

  /// `st` got its last answer (guarded by `mtx`).
  void finish(const std::shared_ptr<stream>& st) {
    st->done = true;
    for (auto& t : st->tokens)
      by_token.erase(t);
    if (!st->sse) {
      if (st->live) {
        auto body = st->answers.size() == 1
                      ? st->answers.front()
                      : "[" + fmt::format("{}", fmt::join(st->answers, ","))
                          + "]";
        st->live->reply_bytes(status::ok, "application/json", body + "\n",
                              st->extra);
      }
      streams.erase(st->id);
      st->live = nullptr;
      return;
    }
    if (st->live)
      st->live->finish();
    st->live = nullptr;
    finished.push_back(st->id);
    while (finished.size() > kept_streams) {
      streams.erase(finished.front());
      finished.pop_front();
    }
  }

  /// Reads a message on the session's serial executor.
  void receive(std::string text) {
    net::post(serial,
              [this, text = std::move(text)] { server->receive(text); });
  }
};

namespace {

/// Once `ex`'s client is gone, `st` waits for a client that resumes it.
void forget_when_gone(const std::shared_ptr<mcp_endpoint::session>& s,
                      const std::shared_ptr<stream>& st,
                      const exchange_ptr& ex) {
  std::weak_ptr<mcp_endpoint::session> weak = s;
  ex->on_gone([weak, st, ex] {
    if (auto s = weak.lock()) {
      std::lock_guard<std::mutex> guard{s->mtx};
      if (st->live == ex)
        st->live = nullptr;
    }
  });
}

} // namespace

mcp_endpoint::mcp_endpoint(api_context& api, net::io_context& ctx,
                           mcp_config cfg)
  : api_(api),
    cfg_(std::move(cfg)),
    exec_(std::make_shared<mcp::call_executors>(cfg_.workers)),
    idle_strand_(net::make_strand(ctx)),
    idle_timer_(idle_strand_) {
  net::dispatch(idle_strand_, [this] { arm_idle(); });
}

mcp_endpoint::~mcp_endpoint() {
  shutdown();
}

size_t mcp_endpoint::sessions() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return sessions_.size();
}

void mcp_endpoint::arm_idle() {
  auto period = std::min<std::chrono::milliseconds>(
    std::max<std::chrono::milliseconds>(cfg_.idle / 4,
                                        std::chrono::milliseconds{100}),
    std::chrono::minutes{1});
  if (idle_stopped_)
    return;
  idle_timer_.expires_after(period);
  idle_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || idle_stopped_)
      return;
    auto limit
      = now_ns()
        - std::chrono::duration_cast<std::chrono::nanoseconds>(cfg_.idle)
            .count();
    std::vector<std::shared_ptr<session>> idle;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      for (auto i = sessions_.begin(); i != sessions_.end();) {
        auto& s = i->second;
        if (s->last_used.load() < limit && s->server->calls_in_flight() == 0) {
          idle.push_back(s);
          i = sessions_.erase(i);
        } else {
          ++i;
        }
      }
    }
    for (auto& s : idle) {
      spdlog::info("mcp: session {} idle for {} s: ending it", s->id,
                   cfg_.idle.count() / 1000);
      end(s);
    }
    arm_idle();
  });
}

void mcp_endpoint::shutdown() {
  // Once only: the destructor calls it again, maybe on a reactor thread.
  if (shut_.exchange(true))
    return;
  // The timer is used on its strand only: once this has run there, its
  // handler runs no more but to see that it was cancelled.
  std::promise<void> stopped;
  net::dispatch(idle_strand_, [this, &stopped] {
    idle_stopped_ = true;
    idle_timer_.cancel();
    stopped.set_value();
  });
  stopped.get_future().wait();
  std::map<std::string, std::shared_ptr<session>> all;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    all.swap(sessions_);
  }
  std::vector<std::future<void>> ends;
  for (auto& [id, s] : all) {
    auto p = std::make_shared<std::promise<void>>();
    ends.push_back(p->get_future());
    end(s, [p] { p->set_value(); });
  }
  for (auto& f : ends)
    f.wait();
}

void mcp_endpoint::end(std::shared_ptr<session> s, std::function<void()> then) {
  {
    std::lock_guard<std::mutex> guard{s->mtx};
    if (s->ended)
      return;
    s->ended = true;
    if (s->standalone)
      s->standalone->finish();
    s->standalone = nullptr;
    for (auto& [id, st] : s->streams)
      if (st->live) {
        if (st->sse)
          st->live->finish();
        else
          st->live->fail(status::not_found, "session_not_found",
                         "the MCP session ended");
        st->live = nullptr;
      }
  }
  auto* srv = s->server.get();
  srv->shutdown_async([this, s, then = std::move(then)](size_t cancelled) {
    if (cancelled > 0)
      spdlog::info("mcp: session {} ended with {} call(s) cancelled", s->id,
                   cancelled);
    // Not on the pool's strand: the server goes with the session.
    net::post(exec_->pools->workers, [this, s, then] {
      if (s->owned) {
        api_.owners.remove(s->sandbox_id);
        caf::anon_send(api_.node, actors::stop_atom_v, s->sandbox_id);
      }
      auto keep = s;
      keep->server.reset();
      keep->tools.reset();
      keep->facade.reset();
      if (then)
        then();
    });
  });
}

std::shared_ptr<mcp_endpoint::session>
mcp_endpoint::find(const exchange_ptr& ex) {
  auto& id = ex->head().header("mcp-session-id");
  if (id.empty()) {
    ex->fail(status::bad_request, "invalid_argument",
             "no Mcp-Session-Id header: send initialize first, then the "
             "session id it answered with");
    return nullptr;
  }
  std::shared_ptr<session> s;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (auto i = sessions_.find(id); i != sessions_.end())
      s = i->second;
  }
  if (!s || s->identity != ex->head().identity) {
    ex->fail(status::not_found, "session_not_found",
             fmt::format("no MCP session {}: it ended or never was; "
                         "initialize a new one",
                         quote_for_message(id)));
    return nullptr;
  }
  s->last_used = now_ns();
  return s;
}

void mcp_endpoint::serve(const exchange_ptr& ex) {
  auto& version = ex->head().header("mcp-protocol-version");
  if (!version.empty()
      && std::find(mcp::protocol_versions.begin(), mcp::protocol_versions.end(),
                   version)
           == mcp::protocol_versions.end())
    return ex->fail(status::bad_request, "invalid_argument",
                    fmt::format("MCP-Protocol-Version {} is not one this "
                                "server speaks ({})",
                                quote_for_message(version),
                                fmt::join(mcp::protocol_versions, ", ")));
  switch (ex->head().method) {
    case verb::post:
      return post(ex);
    case verb::get:
      return resume(ex);
    case verb::delete_:
      return remove(ex);
    default:
      return method_not_allowed(ex, "GET, POST, DELETE");
  }
}

void mcp_endpoint::post(const exchange_ptr& ex) {
  auto& type = ex->head().header("content-type");
  if (type.rfind("application/json", 0) != 0)
    return ex->fail(status::unsupported_media_type, "unsupported_media_type",
                    fmt::format("a POST to /mcp carries application/json, "
                                "got {}",
                                type.empty() ? std::string{"no content type"}
                                             : quote_for_message(type)));
  ex->read_body(max_mcp_body, [this, ex](std::string text) {
    auto body = rpc_json::parse(text, nullptr, false);
    if (body.is_discarded())
      return rpc_fail(ex, status::bad_request, mcp::parse_error,
                      "Parse error: the body is not valid JSON (or not valid "
                      "UTF-8)");
    bool init = body.is_object() && body.value("method", "") == "initialize";
    if (init && ex->head().header("mcp-session-id").empty())
      return start_session(ex, std::move(body), std::move(text));
    auto s = find(ex);
    if (!s)
      return;
    dispatch(s, ex, std::move(body), std::move(text));
  });
}

void mcp_endpoint::start_session(const exchange_ptr& ex, json /*body*/,
                                 std::string text) {
  auto who = ex->head().identity;
  auto make = [this, ex, who,
               text = std::move(text)](actors::session_actor handle,
                                       std::string sandbox_id, bool owned) {
    auto s = std::make_shared<session>(api_, exec_);
    s->id = make_uuid_v4();
    s->identity = who;
    s->sandbox_id = std::move(sandbox_id);
    s->owned = owned;
    s->facade = std::make_unique<actors::blocking_session>(api_.sys,
                                                           std::move(handle));
    s->tools = std::make_unique<mcp::session_tools>(*s->facade);
    mcp::server_config scfg;
    scfg.version = cfg_.version;
    scfg.executors = exec_;
    auto* raw = s.get();
    s->server = std::make_unique<mcp::server>(
      *s->tools, [raw](const std::string& line) { raw->route(line); }, scfg);
    {
      std::lock_guard<std::mutex> guard{mtx_};
      sessions_[s->id] = s;
    }
    spdlog::info("mcp: session {} of {} on sandbox session {}{}", s->id, who,
                 s->sandbox_id, owned ? "" : " (named by the client)");
    dispatch(s, ex, rpc_json::parse(text), text);
  };
  auto& named = ex->head().header("x-sandbox-session");
  if (!named.empty())
    return api_.with_session(ex, named, [make, named](actors::session_actor h) {
      make(std::move(h), named, false);
    });
  api_.create_session(ex, json::object(), who,
                      [make](actors::session_actor h,
                             actors::session_info info) {
                        make(std::move(h), info.id, true);
                      });
}

void mcp_endpoint::dispatch(const std::shared_ptr<session>& s,
                            const exchange_ptr& ex, json body,
                            std::string text) {
  std::vector<std::string> ids;
  std::vector<std::string> tokens;
  bool call = false;
  bool bad_id = false;
  auto scan = [&](const rpc_json& m) {
    if (!m.is_object() || !m.contains("method") || !m.contains("id"))
      return;
    if (!mcp::jsonrpc::valid_id(m["id"])) {
      bad_id = true;
      return;
    }
    ids.push_back(mcp::jsonrpc::dump(m["id"]));
    if (m["method"] == "tools/call")
      call = true;
    if (m.contains("params") && m["params"].is_object()
        && m["params"].contains("_meta") && m["params"]["_meta"].is_object()
        && m["params"]["_meta"].contains("progressToken"))
      tokens.push_back(
        mcp::jsonrpc::dump(m["params"]["_meta"]["progressToken"]));
  };
  if (body.is_array())
    for (auto& m : body)
      scan(m);
  else
    scan(body);
  if (bad_id)
    return rpc_fail(ex, status::bad_request, mcp::invalid_request,
                    "Invalid Request: a request id must be a string or an "
                    "integer");
  if (ids.empty()) {
    // A cancelled request is never answered: its stream ends now.
    auto cancelled = [&](const rpc_json& m) {
      if (!m.is_object() || m.value("method", "") != "notifications/cancelled"
          || !m.contains("params") || !m["params"].is_object()
          || !m["params"].contains("requestId"))
        return;
      std::lock_guard<std::mutex> guard{s->mtx};
      auto i = s->by_request.find(mcp::jsonrpc::dump(m["params"]["requestId"]));
      if (i == s->by_request.end())
        return;
      auto st = i->second;
      s->by_request.erase(i);
      if (st->pending > 0 && --st->pending == 0)
        s->finish(st);
    };
    if (body.is_array())
      for (auto& m : body)
        cancelled(m);
    else
      cancelled(body);
    // Notifications and responses only: nothing to answer but 202.
    s->receive(std::move(text));
    return ex->reply_bytes(status::accepted, "application/json", "");
  }
  auto st = std::make_shared<stream>();
  auto& accept = ex->head().header("accept");
  st->sse = call && accept.find("text/event-stream") != std::string::npos;
  st->pending = 1;
  st->live = ex;
  st->extra = {{"Mcp-Session-Id", s->id}};
  {
    std::lock_guard<std::mutex> guard{s->mtx};
    if (s->ended)
      return ex->fail(status::not_found, "session_not_found",
                      "the MCP session ended");
    st->id = s->next_stream++;
    s->streams[st->id] = st;
    if (!body.is_array())
      st->pending = ids.size();
    for (auto& id : ids)
      s->by_request[id] = st;
    for (auto& t : tokens) {
      s->by_token[t] = st;
      st->tokens.push_back(t);
    }
    if (st->sse) {
      ex->begin(status::ok, "text/event-stream", st->extra);
      // The priming event (MCP 2025-11-25): an id before anything else, so
      // that a stream cut before its first message can be resumed. No
      // data: clients dispatch nothing for it.
      // `retry`: how long a client waits before it reconnects.
      auto priming = fmt::format("id: {}-0\nretry: 1000\ndata:\n\n", st->id);
      st->events.emplace_back(0, priming);
      ex->write(std::move(priming), nullptr);
    }
  }
  forget_when_gone(s, st, ex);
  s->receive(std::move(text));
}

void mcp_endpoint::resume(const exchange_ptr& ex) {
  auto s = find(ex);
  if (!s)
    return;
  auto& last = ex->head().header("last-event-id");
  std::lock_guard<std::mutex> guard{s->mtx};
  if (last.empty()) {
    // The server's own stream: nothing is sent on it yet but what no
    // request's stream takes.
    if (s->standalone)
      s->standalone->finish();
    s->standalone = ex;
    ex->begin(status::ok, "text/event-stream", {{"Mcp-Session-Id", s->id}});
    return;
  }
  uint64_t sid = 0;
  uint64_t seq = 0;
  if (std::sscanf(last.c_str(), "%lu-%lu", &sid, &seq) != 2)
    return ex->fail(status::bad_request, "invalid_argument",
                    fmt::format("Last-Event-ID {} is not an event id of this "
                                "server (STREAM-SEQ)",
                                quote_for_message(last)));
  auto i = s->streams.find(sid);
  if (i == s->streams.end() || !i->second->sse)
    return ex->fail(status::not_found, "not_found",
                    fmt::format("stream {} is not kept any more (or never "
                                "was)",
                                sid));
  auto st = i->second;
  ex->begin(status::ok, "text/event-stream", {{"Mcp-Session-Id", s->id}});
  for (auto& [n, text] : st->events)
    if (n > seq)
      ex->write(text, nullptr);
  if (st->done) {
    ex->finish();
    return;
  }
  // The connection it had is gone (or about to be): this one goes on.
  st->live = ex;
  forget_when_gone(s, st, ex);
}

void mcp_endpoint::remove(const exchange_ptr& ex) {
  auto s = find(ex);
  if (!s)
    return;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    sessions_.erase(s->id);
  }
  spdlog::info("mcp: session {} ended by DELETE", s->id);
  end(s, [ex] { ex->reply_bytes(status::ok, "application/json", ""); });
}

} // namespace sandbox::http
