#include "sandbox/client/blocking_session.hpp"
#include <algorithm>
#include <exception>

#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <caf/scoped_actor.hpp>
#include <fmt/format.h>

#include "client/blocking_ask.hpp"
#include "client/host_thread.hpp"
#include "remote/remote_detail.hpp"
#include "sandbox/actors/registration.hpp"
#include "sandbox/actors/remote.hpp"
#include "sandbox/detail/tsan.hpp"
#include "sandbox/validation.hpp"
#include "session/session.hpp"

namespace sandbox::actors {

namespace detail {

struct facade_pool {
  std::mutex mtx;
  bool closed = false;
  std::vector<std::unique_ptr<caf::scoped_actor>> idle;
};

namespace {

/// The pools of the actor systems whose nodes keep facade actors.
struct facade_pools {
  std::mutex mtx;
  std::map<caf::actor_system*, std::shared_ptr<facade_pool>> by_system;

  static facade_pools& get() {
    static facade_pools pools;
    return pools;
  }

  std::shared_ptr<facade_pool> find(caf::actor_system* sys) {
    std::lock_guard<std::mutex> guard{mtx};
    auto i = by_system.find(sys);
    return i == by_system.end() ? nullptr : i->second;
  }
};

} // namespace

void open_facade_pool(caf::actor_system& sys) {
  auto& pools = facade_pools::get();
  std::lock_guard<std::mutex> guard{pools.mtx};
  pools.by_system[&sys] = std::make_shared<facade_pool>();
}

void close_facade_pool(caf::actor_system& sys) {
  std::shared_ptr<facade_pool> pool;
  {
    auto& pools = facade_pools::get();
    std::lock_guard<std::mutex> guard{pools.mtx};
    auto i = pools.by_system.find(&sys);
    if (i == pools.by_system.end())
      return;
    pool = std::move(i->second);
    pools.by_system.erase(i);
  }
  std::vector<std::unique_ptr<caf::scoped_actor>> idle;
  {
    std::lock_guard<std::mutex> guard{pool->mtx};
    pool->closed = true;
    idle.swap(pool->idle);
  }
  // The actors end here, outside the lock.
}

facade_actor::facade_actor(caf::actor_system& sys, bool remote) {
  if (!remote)
    pool_ = facade_pools::get().find(&sys);
  if (pool_) {
    std::lock_guard<std::mutex> guard{pool_->mtx};
    if (!pool_->idle.empty()) {
      self_ = std::move(pool_->idle.back());
      pool_->idle.pop_back();
    }
  }
  if (!self_) {
    caf_logger_scope keep;
    self_ = std::make_unique<caf::scoped_actor>(sys);
  }
}

facade_actor::~facade_actor() {
  // Left by an exception (a caller's callback threw): items of a stream
  // may still come.
  if (!pool_ || std::uncaught_exceptions() > 0)
    return;
  // The answer came (a request's last message): nothing is left in the
  // mailbox for the next request to find.
  std::lock_guard<std::mutex> guard{pool_->mtx};
  if (!pool_->closed && pool_->idle.size() < facade_pool_size)
    pool_->idle.push_back(std::move(self_));
}

} // namespace detail

sandbox::error from_caf(const caf::error& err) {
  errc code = errc::io_error;
  from_string(error_code_name(err), code);
  return sandbox::error{code, error_message(err)};
}

namespace {

using detail::ask;
using detail::ask_map;
using detail::ask_ok;
using detail::ask_stream;
using detail::receive_stream;

/// Answers each chunk of an execution: hands it to `on_chunk`, then acks.
auto chunk_handler(const chunk_callback& on_chunk) {
  return [&on_chunk](chunk_atom, output_chunk& chunk) {
    if (on_chunk)
      on_chunk(chunk);
    return ack_atom_v;
  };
}

/// Runs an execution that streams its chunks to `on_chunk`.
template <class... Ts>
result<exec_result> stream_request(caf::actor_system& sys,
                                   const session_actor& session,
                                   const chunk_callback& on_chunk, Ts... xs) {
  return ask_stream<chunk_sink, exec_result>(sys, session,
                                             chunk_handler(on_chunk), xs...);
}

} // namespace

result<blocking_session> blocking_session::create(basic_node& node,
                                                  session_config cfg) {
  return create(node.system(), node.node(), std::move(cfg));
}

result<blocking_session> blocking_session::create(caf::actor_system& sys,
                                                  const node_actor& node,
                                                  session_config cfg) {
  if (!cfg.owner && detail::is_remote(sys, node))
    cfg.owner = client_owner(sys);
  return ask_map<blocking_session>(
    sys, node,
    [&](session_actor& s, session_info&) {
      return blocking_session{sys, std::move(s)};
    },
    create_atom_v, std::move(cfg));
}

basic_node::~basic_node() {
  // nop
}

result<std::vector<session_info>> basic_node::list() {
  return ask<std::vector<session_info>>(system(), node(), list_atom_v);
}

result<stop_receipt> basic_node::stop_session(const std::string& id) {
  return ask<stop_receipt>(system(), node(), stop_atom_v, id);
}

result<uint32_t> basic_node::stop_all() {
  return ask<uint32_t>(system(), node(), stop_atom_v);
}

template <class T>
result<T> blocking_session::after_stop(result<T> r) const {
  if (r || !stopped_->has_value() || r.error().code == errc::session_stopped)
    return r;
  return sandbox::error{errc::session_stopped,
                        fmt::format("the session is stopped ({})",
                                    r.error().message)};
}

result<exec_result> blocking_session::execute(const std::string& command,
                                              const exec_options& opts) {
  return after_stop(ask<exec_result>(*sys_, handle_, execute_atom_v, command,
                                     opts, chunk_sink{}));
}

result<exec_result>
blocking_session::execute_streaming(const std::string& command,
                                    const exec_options& opts,
                                    const chunk_callback& on_chunk) {
  return after_stop(
    stream_request(*sys_, handle_, on_chunk, execute_atom_v, command, opts));
}

result<exec_result>
blocking_session::execute_code(const std::string& code,
                               const std::string& language,
                               const exec_options& opts,
                               const chunk_callback& on_chunk) {
  return after_stop(stream_request(*sys_, handle_, on_chunk, code_atom_v, code,
                                   language, opts));
}

result<exec_result> blocking_session::execute_code_streaming(
  const std::string& language, const exec_options& opts,
  const std::function<void(blocking_process)>& on_start,
  const chunk_callback& on_chunk) {
  if (auto ok = validate_language(language); !ok)
    return ok.error();
  // The runner of `execute_code` with the (validated, so shell-safe)
  // language written in, started as a process that keeps its stdin.
  auto command = code_runner_script(language);
  // One facade actor is the sink of the output and gets both answers
  // (the process, then its result); the output may come before either.
  detail::facade_actor actor{*sys_, detail::is_remote(*sys_, handle_)};
  auto& self = *actor;
  auto sink = caf::actor_cast<chunk_sink>(self);
  std::optional<blocking_process> process;
  sandbox::error failure{errc::aborted, "no answer"};
  sandbox::detail::tsan_release_handover();
  auto rh = self->request(handle_, caf::infinite, spawn_atom_v, command, opts,
                          sink);
  {
    response_guard guard{
      self.ptr(), caf::actor_cast<caf::strong_actor_ptr>(handle_), rh.id()};
    rh.receive([&](process_actor& p,
                   int32_t pid) { process.emplace(*sys_, std::move(p), pid); },
               [&](caf::error& err) { failure = from_caf(err); });
  }
  sandbox::detail::tsan_acquire_handover();
  if (!process)
    return after_stop(result<exec_result>{failure});
  auto wait = self->request(process->handle(), caf::infinite, wait_atom_v);
  response_guard guard{
    self.ptr(), caf::actor_cast<caf::strong_actor_ptr>(process->handle()),
    wait.id()};
  if (on_start)
    on_start(*process);
  return receive_stream<exec_result>(self, wait.id(), chunk_handler(on_chunk));
}

result<blocking_process> blocking_session::spawn(const std::string& command,
                                                 const exec_options& opts) {
  return after_stop(ask_map<blocking_process>(
    *sys_, handle_,
    [&](process_actor& p, int32_t pid) {
      return blocking_process{*sys_, std::move(p), pid};
    },
    spawn_atom_v, command, opts, chunk_sink{}));
}

namespace {

uint32_t wait_ms(std::chrono::milliseconds wait) {
  return static_cast<uint32_t>(
    std::clamp<int64_t>(wait.count(), 0, max_process_wait_ms));
}

} // namespace

result<process_info>
blocking_session::start_process(const std::string& command,
                                const process_options& opts) {
  return after_stop(
    ask<process_info>(*sys_, handle_, proc_start_atom_v, command, opts));
}

result<process_output>
blocking_session::read_process(const std::string& id, uint64_t offset,
                               std::chrono::milliseconds wait, uint64_t max) {
  return after_stop(ask<process_output>(*sys_, handle_, proc_read_atom_v, id,
                                        offset, wait_ms(wait), max));
}

result<void> blocking_session::write_process(const std::string& id,
                                             std::string data) {
  // The process actor hands these bytes to the reactor (child_process).
  sandbox::detail::tsan_release(data.data());
  return after_stop(ask_ok(*sys_, handle_, stdin_atom_v, id, std::move(data)));
}

result<void> blocking_session::close_process_stdin(const std::string& id) {
  return after_stop(ask_ok(*sys_, handle_, close_atom_v, id));
}

result<void> blocking_session::kill_process(const std::string& id,
                                            int32_t sig) {
  return after_stop(ask_ok(*sys_, handle_, kill_atom_v, id, sig));
}

result<void> blocking_session::resize_process(const std::string& id,
                                              uint16_t rows, uint16_t cols) {
  return after_stop(ask_ok(*sys_, handle_, resize_atom_v, id, rows, cols));
}

result<process_info>
blocking_session::wait_process(const std::string& id,
                               std::chrono::milliseconds wait) {
  return after_stop(
    ask<process_info>(*sys_, handle_, wait_atom_v, id, wait_ms(wait)));
}

result<std::vector<process_info>> blocking_session::processes() {
  return after_stop(
    ask<std::vector<process_info>>(*sys_, handle_, proc_list_atom_v));
}

result<bool> blocking_session::cancel(const std::string& key) {
  return after_stop(ask<bool>(*sys_, handle_, cancel_atom_v, key));
}

result<stop_receipt> blocking_session::stop() {
  auto r = ask<stop_receipt>(*sys_, handle_, stop_atom_v);
  // Idempotent (§22) also once the session went away after the stop.
  if (!r && stopped_->has_value())
    return **stopped_;
  if (r)
    *stopped_ = *r;
  return r;
}

result<session_info> blocking_session::info() {
  return after_stop(ask<session_info>(*sys_, handle_, info_atom_v));
}

result<std::vector<violation>> blocking_session::violations() {
  return after_stop(
    ask<std::vector<violation>>(*sys_, handle_, violations_atom_v));
}

result<void> blocking_process::write_stdin(std::string data) {
  // The process actor hands these bytes to the reactor (child_process).
  sandbox::detail::tsan_release(data.data());
  return ask_ok(*sys_, handle_, stdin_atom_v, std::move(data));
}

result<void> blocking_process::close_stdin() {
  return ask_ok(*sys_, handle_, close_atom_v);
}

result<void> blocking_process::kill(int32_t sig) {
  return ask_ok(*sys_, handle_, kill_atom_v, sig);
}

result<exec_result> blocking_process::wait() {
  return ask<exec_result>(*sys_, handle_, wait_atom_v);
}

} // namespace sandbox::actors
