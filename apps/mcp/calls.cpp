#include "calls.hpp"

#include <chrono>
#include <exception>
#include <future>
#include <string_view>
#include <vector>

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sandbox/uuid.hpp"

namespace sandbox::mcp {

namespace {

using jsonrpc::json;

/// The output of a call kept for its progress messages.
constexpr size_t tail_bytes = 8 * 1024;

/// How often the pool repeats the cancellation of a call that has not
/// ended yet (its command may not have been started when it was asked).
constexpr std::chrono::milliseconds cancel_retry{200};

/// The last `n` lines of `text` (a last line without its newline counts).
std::string last_lines(std::string_view text, size_t n) {
  if (!text.empty() && text.back() == '\n')
    text.remove_suffix(1);
  auto pos = text.size();
  for (size_t i = 0; i < n && pos != std::string_view::npos; ++i)
    pos = pos == 0 ? std::string_view::npos : text.rfind('\n', pos - 1);
  return std::string{pos == std::string_view::npos ? text
                                                   : text.substr(pos + 1)};
}

/// The response to call `id` that ended with `r`, in protocol `version`:
/// structuredContent since 2025-06-18; since 2025-11-25 arguments that do
/// not fit the tool are a failed tool (the model can correct itself), and
/// a second text block holds the structured content's serialized JSON (as
/// the spec asks of a tool with an outputSchema); the first stays the
/// tool's text for people and models (numbered lines, exit code).
json answer(const json& id, result<actors::tool_result> r,
            const std::string& version) {
  bool structured = version >= "2025-06-18";
  bool current = version >= "2025-11-25";
  if (!r && current && r.error().code == errc::invalid_argument) {
    actors::tool_result failed;
    failed.is_error = true;
    failed.text = r.error().message;
    failed.structured = {{"error", "invalid_argument"},
                         {"message", r.error().message}};
    r = std::move(failed);
  }
  if (r) {
    json content = json::array();
    content.push_back({{"type", "text"}, {"text", r->text}});
    if (current && r->structured.is_object())
      content.push_back(
        {{"type", "text"}, {"text", jsonrpc::dump(json(r->structured))}});
    json res{{"content", std::move(content)}, {"isError", r->is_error}};
    if (structured && r->structured.is_object())
      res["structuredContent"] = json(r->structured);
    return jsonrpc::result_response(id, std::move(res));
  }
  if (r.error().code == errc::invalid_argument)
    return jsonrpc::error_response(
      id, invalid_params, fmt::format("Invalid params: {}", r.error().message));
  // Anything else went wrong in the tool: the model sees it.
  json content = json::array();
  content.push_back({{"type", "text"},
                     {"text", fmt::format("{}: {}", to_string(r.error().code),
                                          r.error().message)}});
  return jsonrpc::result_response(id, {{"content", std::move(content)},
                                       {"isError", true}});
}

} // namespace

call_executors::call_executors(size_t workers)
  : pools(std::make_unique<impl>(workers)) {
}

call_executors::~call_executors() {
  pools->workers.join();
  pools->ticker.join();
}

call_pool::call_pool(tool_provider& tools, jsonrpc::output& out,
                     const server_config& cfg,
                     std::function<std::string()> version)
  : tools_(tools),
    out_(out),
    cfg_(cfg),
    version_(std::move(version)),
    key_prefix_("mcp-" + make_uuid_v4()),
    exec_(cfg.executors ? cfg.executors
                        : std::make_shared<call_executors>(cfg.workers)),
    ticker_(boost::asio::make_strand(exec_->pools->ticker.get_executor())),
    progress_timer_(ticker_),
    retry_timer_(ticker_) {
  boost::asio::post(ticker_, [this] {
    next_progress_ = std::chrono::steady_clock::now() + cfg_.progress_interval;
    arm_progress();
  });
}

call_pool::~call_pool() {
  shutdown();
}

call_pool::queued call_pool::start(call_ptr c) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (stopping_)
      return queued::stopping;
    if (!calls_.emplace(jsonrpc::dump(c->id), c).second)
      return queued::id_in_use;
    c->key = fmt::format("{}-{}", key_prefix_, ++next_key_);
    ++tasks_;
  }
  boost::asio::post(exec_->pools->workers, [this, c] {
    run(c);
    std::function<void()> finish;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (--tasks_ == 0 && finish_)
        finish = std::move(finish_);
    }
    if (finish)
      finish();
  });
  return queued::yes;
}

void call_pool::run(const call_ptr& c) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (c->cancelled)
      return; // cancelled while it waited: answered nothing, never runs
    c->running = true;
  }
  actors::tool_call_context ctx;
  ctx.cancel_key = c->key;
  ctx.on_output = [c](const output_chunk& chunk) {
    std::lock_guard<std::mutex> guard{c->out_mtx};
    c->tail += chunk.data;
    if (c->tail.size() > tail_bytes)
      c->tail.erase(0, c->tail.size() - tail_bytes);
  };
  result<actors::tool_result> r = error{errc::io_error, "not run"};
  try {
    r = tools_.call(c->name, nlohmann::json(c->arguments), ctx);
  } catch (const std::exception& e) {
    r = error{errc::io_error, e.what()};
  }
  auto response = answer(c->id, std::move(r), version_());
  bool cancelled;
  {
    // Once out of the table, the ticker reports no more progress for it.
    std::lock_guard<std::mutex> guard{mtx_};
    calls_.erase(jsonrpc::dump(c->id));
    cancelled = c->cancelled;
  }
  if (cancelled) {
    spdlog::info("mcp: call {} cancelled", jsonrpc::brief(c->id));
    out_.deliver(c->in_batch, std::nullopt);
  } else {
    out_.deliver(c->in_batch, std::move(response));
  }
}

void call_pool::cancel(const json& request_id) {
  call_ptr c;
  bool running;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = calls_.find(jsonrpc::dump(request_id));
    if (i == calls_.end()) {
      // Done already, or never known: the spec says to ignore it.
      spdlog::info("mcp: nothing to cancel for id {}",
                   jsonrpc::brief(request_id));
      return;
    }
    c = i->second;
    c->cancelled = true;
    running = c->running;
    if (!running)
      calls_.erase(i); // its task returns at once when a worker takes it
  }
  if (!running) {
    out_.deliver(c->in_batch, std::nullopt);
    return;
  }
  tools_.cancel(c->key);
  boost::asio::post(ticker_, [this] { arm_retry(); });
}

size_t call_pool::in_flight() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return calls_.size();
}

size_t call_pool::shutdown() {
  std::promise<size_t> done;
  shutdown_async([&done](size_t n) { done.set_value(n); });
  return done.get_future().get();
}

void call_pool::shutdown_async(std::function<void(size_t)> done) {
  size_t count = 0;
  std::vector<std::string> keys;
  bool idle;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (stopping_) {
      idle = true;
    } else {
      idle = false;
      stopping_ = true;
      count = calls_.size();
      for (auto i = calls_.begin(); i != calls_.end();) {
        auto& c = i->second;
        c->cancelled = true;
        if (c->running) {
          keys.push_back(c->key);
          ++i;
        } else {
          i = calls_.erase(i);
        }
      }
    }
  }
  if (idle)
    return done(0);
  for (auto& key : keys)
    tools_.cancel(key);
  // A command may start after its first cancellation: the ticker repeats
  // it until every call has ended.
  boost::asio::post(ticker_, [this] { arm_retry(); });
  // Once the last task of this pool has finished, the timers are
  // cancelled on their strand; once every wait's handler has come back
  // there (when_no_wait), nothing of the pool runs any more.
  auto finish = [this, done = std::move(done), count]() mutable {
    boost::asio::post(ticker_, [this, done = std::move(done), count]() mutable {
      progress_timer_.cancel();
      retry_timer_.cancel();
      when_no_wait(std::move(done), count);
    });
  };
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (tasks_ > 0) {
      finish_ = std::move(finish);
      return;
    }
  }
  finish();
}

// -- the ticker's thread ------------------------------------------------------

void call_pool::when_no_wait(std::function<void(size_t)> done, size_t count) {
  // A timer's handler, cancelled or just expired, may still be on its way
  // to the strand: the pool is done once every wait has come back.
  if (waits_ == 0)
    return done(count);
  boost::asio::post(ticker_, [this, done = std::move(done), count]() mutable {
    when_no_wait(std::move(done), count);
  });
}

void call_pool::arm_progress() {
  progress_timer_.expires_at(next_progress_);
  ++waits_;
  progress_timer_.async_wait([this](const boost::system::error_code& ec) {
    --waits_;
    if (!ec)
      on_progress_tick();
  });
}

void call_pool::on_progress_tick() {
  next_progress_ += cfg_.progress_interval;
  {
    // Under the lock: no progress after a call answered.
    std::lock_guard<std::mutex> guard{mtx_};
    if (stopping_)
      return;
    bool with_message = version_() != "2024-11-05";
    for (auto& [k, c] : calls_) {
      if (!c->running || c->cancelled || c->progress_token.is_null())
        continue;
      json p{{"progressToken", c->progress_token}, {"progress", ++c->progress}};
      if (with_message) {
        std::string tail;
        {
          std::lock_guard<std::mutex> out_guard{c->out_mtx};
          tail = last_lines(c->tail, cfg_.progress_lines);
        }
        p["message"] = tail.empty() ? "running, no output yet" : tail;
      }
      out_.send({{"jsonrpc", "2.0"},
                 {"method", "notifications/progress"},
                 {"params", std::move(p)}});
    }
  }
  arm_progress();
}

void call_pool::arm_retry() {
  if (retry_armed_)
    return;
  retry_armed_ = true;
  retry_timer_.expires_after(cancel_retry);
  ++waits_;
  retry_timer_.async_wait([this](const boost::system::error_code& ec) {
    --waits_;
    retry_armed_ = false;
    if (!ec)
      retry_cancels();
  });
}

void call_pool::retry_cancels() {
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    for (auto& [k, c] : calls_)
      if (c->running && c->cancelled)
        keys.push_back(c->key);
  }
  if (keys.empty())
    return;
  for (auto& key : keys)
    tools_.cancel(key);
  arm_retry();
}

} // namespace sandbox::mcp
