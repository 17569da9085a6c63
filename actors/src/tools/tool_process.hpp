#pragma once

// The tools of long-lived processes (docs/processes.md): `process_start`,
// `process_write`, `process_kill` and `process_list`. A call answers when
// the process ends, after its yield time, or once output came and then
// paused, with the output so far and the offset it continues at.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "sandbox/client/blocking_session.hpp"
#include "sandbox/tools/tools.hpp"

namespace sandbox::actors::detail {

/// Where each process's output was read up to by the calls of one toolbox
/// (the default `from_offset` of `process_write`).
class process_offsets {
public:
  uint64_t get(const std::string& id);
  void set(const std::string& id, uint64_t offset);

private:
  std::mutex mtx_;
  std::map<std::string, uint64_t> next_;
};

tool process_start_tool(const toolbox_options& opts);
tool process_write_tool(const toolbox_options& opts);
tool process_kill_tool();
tool process_list_tool();

/// Each runs a call whose `args` passed the tool's schema.
tool_result
call_process_start(blocking_session& session, const toolbox_options& opts,
                   process_offsets& offsets, const nlohmann::json& args);
tool_result
call_process_write(blocking_session& session, const toolbox_options& opts,
                   process_offsets& offsets, const nlohmann::json& args);
tool_result call_process_kill(blocking_session& session,
                              const nlohmann::json& args);
tool_result call_process_list(blocking_session& session);

} // namespace sandbox::actors::detail
