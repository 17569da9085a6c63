#pragma once

// The one place where tool arguments are checked against a tool's JSON
// Schema (valijson). Tools read their members only after this check.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sandbox/errc.hpp"

namespace sandbox::actors::detail {

/// The input schema of a tool: an object of `properties`, `required`
/// among them, and no other member.
nlohmann::json object_schema(nlohmann::json properties,
                             std::vector<std::string> required = {});

/// The output schema of a tool: an object whose members, when present,
/// have the types `properties` gives (no member is required, others may
/// come), plus the `error` and `message` of a failed tool.
nlohmann::json output_schema(nlohmann::json properties);

/// MCP's annotations of a tool.
nlohmann::json hints(bool read_only, bool destructive, bool idempotent,
                     bool open_world);

/// A compiled input schema of one tool.
class tool_schema {
public:
  /// Compiles `schema` (a draft-7 compatible JSON Schema) for `tool`.
  tool_schema(std::string tool, nlohmann::json schema);
  ~tool_schema();
  tool_schema(tool_schema&&) noexcept;
  tool_schema& operator=(tool_schema&&) noexcept;

  /// Checks `args` against the schema.
  /// @returns `invalid_argument` with a message that starts with the tool's
  ///   name and names the offending member, e.g.
  ///   `shell: missing required member "command"`,
  ///   `shell: unknown member "cmd"`,
  ///   `shell: "timeout" must be a number, got "5"`.
  result<void> validate(const nlohmann::json& args) const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace sandbox::actors::detail
