#include "tool_exec.hpp"

#include <string.h>

#include <chrono>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "sandbox/uuid.hpp"
#include "tool_schema.hpp"
#include "tool_text.hpp"

namespace sandbox::actors::detail {

namespace {

using nlohmann::json;

/// The largest timeout, in seconds (`exec_options::timeout`'s range, as the
/// CLI's --timeout).
constexpr int64_t max_timeout_seconds
  = std::chrono::duration_cast<std::chrono::seconds>(max_exec_timeout).count();

json timeout_schema() {
  return {{"type", "number"},
          {"minimum", 0},
          {"maximum", max_timeout_seconds},
          {"description", "Seconds before the command is ended (exit code "
                          "124, exit reason \"timeout\"); fractions allowed; "
                          "0 or absent: no limit."}};
}

std::string cap_phrase(const toolbox_options& opts) {
  if (opts.output_cap % 1024 == 0)
    return fmt::format("{} KiB", opts.output_cap / 1024);
  return fmt::format("{} bytes", opts.output_cap);
}

/// Execution options from the members `timeout`, `cwd` and `env`.
exec_options to_options(const toolbox_options& opts, const json& args,
                        const tool_call_context& ctx) {
  exec_options out;
  if (auto t = args.find("timeout"); t != args.end()) {
    // Rounded up, as the CLI does: 0.0001 s is a limit, not "none".
    auto ms = static_cast<int64_t>(std::ceil(t->get<double>() * 1000.0));
    out.timeout = std::chrono::milliseconds{ms};
  }
  read_cwd_and_env(args, out);
  out.cancel_key = ctx.cancel_key.empty() ? "tool-" + make_uuid_v4()
                                          : ctx.cancel_key;
  out.output_cap = opts.output_cap;
  return out;
}

/// Adds `data` to `text` as lines (a final newline added when missing).
void append_block(std::string& text, const std::string& data) {
  text += data;
  if (!data.empty() && data.back() != '\n')
    text += '\n';
}

/// "[exit code 0]", "[exit code 124: timed out after 2 s]"...
std::string exit_line(const exec_result& r, std::chrono::milliseconds timeout) {
  return "[" + exit_phrase(r.exit_code, r.reason, timeout) + "]";
}

/// The tool result of an execution (see docs/mcp.md, "Tools").
tool_result to_tool_result(const result<exec_result>& r,
                           const exec_options& opts) {
  if (!r)
    return tool_failure(to_string(r.error().code), r.error().message);
  auto out = to_valid_utf8(r->stdout_data);
  auto err = to_valid_utf8(r->stderr_data);
  tool_result res;
  append_block(res.text, out);
  if (!err.empty()) {
    res.text += "[stderr]\n";
    append_block(res.text, err);
  }
  res.text += exit_line(*r, opts.timeout);
  res.text += '\n';
  if (r->truncated)
    res.text += fmt::format("[output truncated: {} bytes dropped in the "
                            "middle; the head and the tail are kept]\n",
                            r->dropped_bytes);
  // What a contained session refused, and the limit that ended the
  // command (docs/security.md), as the CLI shows them.
  for (auto& v : r->violations)
    res.text += fmt::format("[sandbox: {}]\n",
                            to_valid_utf8(describe(v, r->ended_by)));
  if (r->violations_dropped > 0)
    res.text += fmt::format("[sandbox: {} more refusals not listed]\n",
                            r->violations_dropped);
  res.structured
    = {{"exit_code", r->exit_code}, {"exit_reason", to_string(r->reason)},
       {"stdout", std::move(out)},  {"stderr", std::move(err)},
       {"truncated", r->truncated}, {"dropped_bytes", r->dropped_bytes}};
  if (r->ended_by != violation_kind::none)
    res.structured["ended_by"] = to_string(r->ended_by);
  if (!r->violations.empty() || r->violations_dropped > 0) {
    auto list = nlohmann::json::array();
    for (auto& v : r->violations)
      list.push_back(
        {{"kind", to_string(v.kind)}, {"detail", to_valid_utf8(v.detail)}});
    res.structured["violations"] = std::move(list);
    res.structured["violations_dropped"] = r->violations_dropped;
  }
  return res;
}

} // namespace

std::string exit_phrase(int32_t exit_code, exit_reason reason,
                        std::chrono::milliseconds timeout) {
  switch (reason) {
    case exit_reason::exited:
      return fmt::format("exit code {}", exit_code);
    case exit_reason::signalled: {
      auto sig = exit_code - 128;
      const char* name = ::sigabbrev_np(sig);
      return fmt::format("exit code {}: killed by signal {}{}", exit_code, sig,
                         name != nullptr ? fmt::format(" (SIG{})", name)
                                         : std::string{});
    }
    case exit_reason::timeout:
      if (timeout.count() <= 0)
        return fmt::format("exit code {}: timed out", exit_code);
      return fmt::format("exit code {}: timed out after {:g} s", exit_code,
                         static_cast<double>(timeout.count()) / 1000.0);
    case exit_reason::cancelled:
      return fmt::format("exit code {}: cancelled", exit_code);
    case exit_reason::stopped:
      return fmt::format("exit code {}: the session was stopped", exit_code);
  }
  return fmt::format("exit code {}", exit_code);
}

json cwd_schema(std::string_view whose) {
  return {{"type", "string"},
          {"description",
           fmt::format("Working directory of {}; a relative path resolves "
                       "against the session's working directory.",
                       whose)}};
}

json env_schema(std::string_view whose) {
  return {{"type", "object"},
          {"additionalProperties", {{"type", "string"}}},
          {"description",
           fmt::format("Environment variables set for {} only, NAME: value.",
                       whose)}};
}

void read_cwd_and_env(const json& args, exec_options& out) {
  out.cwd = args.value("cwd", std::string{});
  if (auto env = args.find("env"); env != args.end())
    for (auto& [key, value] : env->items())
      out.env[key] = value.get<std::string>();
}

/// What `shell` and `code` answer, and their hints.
void describe_result(tool& t) {
  t.output_schema
    = output_schema({{"exit_code", {{"type", "integer"}}},
                     {"exit_reason", {{"type", "string"}}},
                     {"stdout", {{"type", "string"}}},
                     {"stderr", {{"type", "string"}}},
                     {"truncated", {{"type", "boolean"}}},
                     {"dropped_bytes", {{"type", "integer"}}},
                     {"ended_by", {{"type", "string"}}},
                     {"violations", {{"type", "array"}}},
                     {"violations_dropped", {{"type", "integer"}}}});
  t.annotations = hints(false, true, false, true);
}

tool shell_tool(const toolbox_options& opts) {
  tool t;
  t.name = "shell";
  t.description = fmt::format(
    "Run a shell command in the sandbox and get its exit code, stdout and "
    "stderr. The command runs with /bin/sh -c in the session's working "
    "directory (or `cwd`), stdin is /dev/null; each call starts a new "
    "shell, so `cd` and variables do not carry over (files do). Use "
    "`timeout` for commands that may not end. Each stream keeps at most {} "
    "(its head and tail; the result says how many bytes were dropped). A "
    "non-zero exit code is reported, not treated as a failure.",
    cap_phrase(opts));
  t.input_schema = object_schema(
    {{"command",
      {{"type", "string"},
       {"description", "The shell command line, e.g. \"ls -la && make "
                       "test\"."}}},
     {"timeout", timeout_schema()},
     {"cwd", cwd_schema("the command")},
     {"env", env_schema("this command")}},
    {"command"});
  t.title = "Run a shell command";
  describe_result(t);
  return t;
}

tool code_tool(const toolbox_options& opts) {
  tool t;
  t.name = "code";
  t.description = fmt::format(
    "Run a piece of code with an interpreter in the sandbox (python3, node, "
    "bash, sh, perl, ...: any interpreter on the PATH that reads a program "
    "from stdin) and get its exit code, stdout and stderr. The code is "
    "given to the interpreter on stdin, in the session's working "
    "directory. A missing interpreter ends with exit code 127. Each stream "
    "keeps at most {} (head and tail).",
    cap_phrase(opts));
  t.input_schema = object_schema(
    {{"code",
      {{"type", "string"}, {"description", "The program's source code."}}},
     {"language",
      {{"type", "string"},
       {"description", "The interpreter's name, e.g. \"python3\"; letters, "
                       "digits, '.', '_' and '-' only."}}},
     {"timeout", timeout_schema()}},
    {"code", "language"});
  t.title = "Run code";
  describe_result(t);
  return t;
}

tool_result call_shell(blocking_session& session, const toolbox_options& opts,
                       const json& args, const tool_call_context& ctx) {
  auto eopts = to_options(opts, args, ctx);
  auto r = session.execute_streaming(args.at("command").get<std::string>(),
                                     eopts, ctx.on_output);
  return to_tool_result(r, eopts);
}

tool_result call_code(blocking_session& session, const toolbox_options& opts,
                      const json& args, const tool_call_context& ctx) {
  auto eopts = to_options(opts, args, ctx);
  // The session checks the language as for the CLI (validate_language) and
  // runs the shared runner script (code_runner_script).
  auto r = session.execute_code(args.at("code").get<std::string>(),
                                args.at("language").get<std::string>(), eopts,
                                ctx.on_output);
  return to_tool_result(r, eopts);
}

} // namespace sandbox::actors::detail
