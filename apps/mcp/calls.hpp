#pragma once

// The tools/call side of the MCP server (docs/mcp.md): calls run on a pool
// of workers, a ticker reports the progress of running calls and repeats
// the cancellation of calls that have not ended yet.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>

#include "jsonrpc.hpp"
#include "mcp/server.hpp"

namespace sandbox::mcp {

/// One tools/call, waiting for a worker or running.
struct call {
  jsonrpc::json id;
  std::string name;
  jsonrpc::json arguments;
  /// Null: the client asked for no progress.
  jsonrpc::json progress_token;
  jsonrpc::batch_ptr in_batch;
  /// The cancel key of its execution (set by `call_pool::start`).
  std::string key;
  /// Guarded by the pool's mutex.
  bool running = false;
  bool cancelled = false;
  uint64_t progress = 0;
  /// The latest output (guarded by `out_mtx`: the worker appends, the
  /// ticker reads).
  std::mutex out_mtx;
  std::string tail;
};

using call_ptr = std::shared_ptr<call>;

struct call_executors::impl {
  explicit impl(size_t workers) : workers(workers == 0 ? 1 : workers) {
  }
  boost::asio::thread_pool workers;
  boost::asio::thread_pool ticker{1};
};

/// The calls of one server: each runs on a worker of its `call_executors`
/// and answers through `out` when done; the ticker thread drives two
/// timers of the pool's, progress and cancel retries, on a strand of the
/// pool's own.
class call_pool {
public:
  /// `version` returns the negotiated protocol version (it decides what a
  /// result and a progress notification carry).
  call_pool(tool_provider& tools, jsonrpc::output& out,
            const server_config& cfg, std::function<std::string()> version);

  /// Shuts down.
  ~call_pool();

  call_pool(const call_pool&) = delete;
  call_pool& operator=(const call_pool&) = delete;

  enum class queued { yes, id_in_use, stopping };

  /// Queues `c` for a worker, unless its id is in use by a call that has
  /// not answered yet or the pool is stopping.
  queued start(call_ptr c);

  /// Cancels the call `request_id`: a waiting one never runs, a running
  /// one has its command ended; neither answers. Unknown ids are ignored.
  void cancel(const jsonrpc::json& request_id);

  /// Calls that run or wait for a worker.
  size_t in_flight() const;

  /// Cancels every call that runs or waits (they answer nothing) and waits
  /// until they have ended; returns how many there were. Later calls are
  /// refused. Idempotent (0 the second time).
  size_t shutdown();

  /// As `shutdown`, without waiting: `done` gets the count (on the ticker
  /// thread) once every call has ended and no handler of the pool runs
  /// any more; the pool may be destroyed from then on (not inside `done`
  /// itself: it runs on the pool's strand).
  void shutdown_async(std::function<void(size_t)> done);

private:
  void run(const call_ptr& c);
  void on_progress_tick();
  void arm_progress();
  void arm_retry();
  /// Runs `done(count)` on the strand once no timer wait is outstanding.
  void when_no_wait(std::function<void(size_t)> done, size_t count);
  void retry_cancels();

  tool_provider& tools_;
  jsonrpc::output& out_;
  server_config cfg_;
  std::function<std::string()> version_;

  mutable std::mutex mtx_;
  bool stopping_ = false;
  /// Calls that wait or run, by their id's JSON text (1 and "1" differ).
  std::map<std::string, call_ptr> calls_;
  /// Cancel keys are `mcp-<uuid of this pool>-<n>`: unique among the MCP
  /// servers (and CLIs) that use one session at the same time.
  std::string key_prefix_;
  uint64_t next_key_ = 0;

  std::shared_ptr<call_executors> exec_;
  /// Tasks of this pool posted to the workers and not finished yet
  /// (guarded by `mtx_`); `shutdown` waits for none.
  size_t tasks_ = 0;
  /// What `shutdown_async` does once `tasks_` is 0 (guarded by `mtx_`).
  std::function<void()> finish_;
  /// The timers and their handlers are used only on this strand.
  boost::asio::strand<boost::asio::thread_pool::executor_type> ticker_;
  boost::asio::steady_timer progress_timer_;
  boost::asio::steady_timer::time_point next_progress_;
  boost::asio::steady_timer retry_timer_;
  bool retry_armed_ = false;
  /// Timer waits whose handler has not run yet (on the strand only).
  size_t waits_ = 0;
};

} // namespace sandbox::mcp
