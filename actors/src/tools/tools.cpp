#include "sandbox/tools/tools.hpp"

#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "sandbox/validation.hpp"
#include "tool_exec.hpp"
#include "tool_file_editor.hpp"
#include "tool_process.hpp"
#include "tool_schema.hpp"

namespace sandbox::actors {

namespace {

using nlohmann::json;

/// How each tool runs; `args` passed its schema.
enum class tool_id {
  shell,
  code,
  file_editor,
  process_start,
  process_write,
  process_kill,
  process_list
};

} // namespace

struct toolbox::impl {
  impl(blocking_session& s, toolbox_options o)
    : session(s), opts(o), editor(s, opts) {
    specs = {detail::shell_tool(opts),         detail::code_tool(opts),
             detail::file_editor::spec(),      detail::process_start_tool(opts),
             detail::process_write_tool(opts), detail::process_kill_tool(),
             detail::process_list_tool()};
    for (auto& t : specs)
      schemas.emplace_back(t.name, t.input_schema);
  }

  blocking_session& session;
  toolbox_options opts;
  std::vector<tool> specs;
  /// One per spec, same order.
  std::vector<detail::tool_schema> schemas;
  /// Serialises file_editor calls (its history and read-modify-write).
  std::mutex editor_mtx;
  detail::file_editor editor;
  detail::process_offsets offsets;
};

toolbox::toolbox(blocking_session& session, toolbox_options opts)
  : impl_(std::make_unique<impl>(session, opts)) {
}

toolbox::~toolbox() = default;

const std::vector<tool>& toolbox::tools() const {
  return impl_->specs;
}

result<tool_result> toolbox::call(const std::string& name,
                                  const nlohmann::json& arguments,
                                  const tool_call_context& ctx) {
  auto& specs = impl_->specs;
  size_t index = 0;
  while (index < specs.size() && specs[index].name != name)
    ++index;
  if (index == specs.size())
    return error{errc::invalid_argument,
                 fmt::format("unknown tool: {} (tools: shell, code, "
                             "file_editor, process_start, process_write, "
                             "process_kill, process_list)",
                             quote_for_message(name))};
  static const json no_arguments = json::object();
  const json& args = arguments.is_null() ? no_arguments : arguments;
  if (auto ok = impl_->schemas[index].validate(args); !ok)
    return ok.error();
  switch (static_cast<tool_id>(index)) {
    case tool_id::shell:
      return detail::call_shell(impl_->session, impl_->opts, args, ctx);
    case tool_id::code:
      return detail::call_code(impl_->session, impl_->opts, args, ctx);
    case tool_id::file_editor: {
      std::lock_guard<std::mutex> guard{impl_->editor_mtx};
      return impl_->editor.call(args);
    }
    case tool_id::process_start:
      return detail::call_process_start(impl_->session, impl_->opts,
                                        impl_->offsets, args);
    case tool_id::process_write:
      return detail::call_process_write(impl_->session, impl_->opts,
                                        impl_->offsets, args);
    case tool_id::process_kill:
      return detail::call_process_kill(impl_->session, args);
    case tool_id::process_list:
      return detail::call_process_list(impl_->session);
  }
  return error{errc::invalid_argument, "unreachable"};
}

} // namespace sandbox::actors
