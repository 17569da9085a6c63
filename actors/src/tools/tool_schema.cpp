#include "tool_schema.hpp"

#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace sandbox::actors::detail {

namespace {

using nlohmann::json;

/// A JSON value as it appears in a message: compact, at most ~60 bytes.
std::string show(const json& value) {
  auto text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 60)
    text = text.substr(0, 57) + "...";
  return text;
}

/// "a string", "an integer"... for the `type` keyword of a schema node.
std::string type_phrase(const json& schema) {
  auto t = schema.find("type");
  if (t == schema.end() || !t->is_string())
    return "of another type";
  auto name = t->get<std::string>();
  bool vowel = !name.empty()
               && std::string_view{"aeiou"}.find(name[0])
                    != std::string_view::npos;
  return (vowel ? "an " : "a ") + name;
}

/// The text between the last pair of single quotes of `s`.
std::string last_quoted(const std::string& s) {
  auto end = s.rfind('\'');
  if (end == std::string::npos || end == 0)
    return {};
  auto begin = s.rfind('\'', end - 1);
  if (begin == std::string::npos)
    return {};
  return s.substr(begin + 1, end - begin - 1);
}

/// Where in the arguments a validation error is: the schema node and value
/// node it refers to and a display name such as `view_range[1]`.
struct location {
  const json* schema = nullptr;
  const json* value = nullptr;
  std::string name;
};

/// Follows valijson's context (`<root>`, `[member]`, `[index]`...).
location locate(const json& schema, const json& args,
                const std::vector<std::string>& context) {
  static const json empty = json::object();
  location loc{&schema, &args, {}};
  for (auto& seg : context) {
    if (seg.size() < 2 || seg.front() != '[' || seg.back() != ']')
      continue; // "<root>"
    auto key = seg.substr(1, seg.size() - 2);
    const json& s = *loc.schema;
    const json& v = *loc.value;
    if (v.is_array()) {
      auto i = std::stoul(key);
      loc.value = i < v.size() ? &v[i] : &empty;
      loc.schema = s.contains("items") ? &s["items"] : &empty;
      loc.name += "[" + key + "]";
      continue;
    }
    loc.value = v.is_object() && v.contains(key) ? &v[key] : &empty;
    if (s.contains("properties") && s["properties"].contains(key))
      loc.schema = &s["properties"][key];
    else if (s.contains("additionalProperties")
             && s["additionalProperties"].is_object())
      loc.schema = &s["additionalProperties"];
    else
      loc.schema = &empty;
    loc.name += loc.name.empty() ? key : "." + key;
  }
  return loc;
}

/// "must be from 0 to 10", "must be >= 0" or "must be <= 10".
std::string bounds_phrase(const json& schema) {
  auto lo = schema.find("minimum");
  auto hi = schema.find("maximum");
  if (lo != schema.end() && hi != schema.end())
    return fmt::format("must be from {} to {}", lo->dump(), hi->dump());
  if (lo != schema.end())
    return fmt::format("must be >= {}", lo->dump());
  if (hi != schema.end())
    return fmt::format("must be <= {}", hi->dump());
  return "is out of range";
}

/// "must have 2 items", "must have 1 to 3 items"...
std::string items_phrase(const json& schema) {
  auto lo = schema.value("minItems", 0);
  auto hi = schema.value("maxItems", -1);
  if (lo == hi)
    return fmt::format("must have {} item{}", lo, lo == 1 ? "" : "s");
  if (hi < 0)
    return fmt::format("must have at least {} items", lo);
  return fmt::format("must have {} to {} items", lo, hi);
}

/// The message of one valijson error, naming the member.
std::string explain(const json& schema, const json& args,
                    const valijson::ValidationResults::Error& err) {
  auto loc = locate(schema, args, err.context);
  auto& what = err.description;
  auto member = loc.name.empty() ? std::string{"arguments"}
                                 : fmt::format("\"{}\"", loc.name);
  auto prefix = loc.name.empty() ? std::string{} : loc.name + ".";
  if (what.find("Missing required property") != std::string::npos)
    return fmt::format("missing required member \"{}{}\"", prefix,
                       last_quoted(what));
  if (what.find("could not be validated using 'properties'")
      != std::string::npos) {
    std::string known;
    if (loc.schema->contains("properties"))
      for (auto& [key, _] : (*loc.schema)["properties"].items())
        known += (known.empty() ? "" : ", ") + key;
    return fmt::format("unknown member \"{}{}\" (members: {})", prefix,
                       last_quoted(what), known);
  }
  if (what.find("'type' constraint") != std::string::npos)
    return fmt::format("{} must be {}, got {}", member,
                       type_phrase(*loc.schema), show(*loc.value));
  if (what.find("enum") != std::string::npos) {
    std::string allowed;
    for (auto& x : loc.schema->value("enum", json::array()))
      allowed += (allowed.empty() ? "" : ", ") + x.dump();
    return fmt::format("{} must be one of {}; got {}", member, allowed,
                       show(*loc.value));
  }
  if (what.find("Expected number") != std::string::npos)
    return fmt::format("{} {}, got {}", member, bounds_phrase(*loc.schema),
                       show(*loc.value));
  if (what.find("Array should contain") != std::string::npos)
    return fmt::format("{} {}, got {}", member, items_phrase(*loc.schema),
                       show(*loc.value));
  return fmt::format("{}: {}", member, what);
}

} // namespace

json output_schema(json properties) {
  properties["error"] = {{"type", "string"}};
  properties["message"] = {{"type", "string"}};
  return {{"type", "object"}, {"properties", std::move(properties)}};
}

json hints(bool read_only, bool destructive, bool idempotent, bool open_world) {
  return {{"readOnlyHint", read_only},
          {"destructiveHint", destructive},
          {"idempotentHint", idempotent},
          {"openWorldHint", open_world}};
}

json object_schema(json properties, std::vector<std::string> required) {
  json out = {{"type", "object"},
              {"properties", std::move(properties)},
              {"additionalProperties", false}};
  if (!required.empty())
    out["required"] = std::move(required);
  return out;
}

struct tool_schema::impl {
  std::string tool;
  json schema;
  valijson::Schema compiled;
};

tool_schema::tool_schema(std::string tool, json schema)
  : impl_(std::make_unique<impl>()) {
  impl_->tool = std::move(tool);
  impl_->schema = std::move(schema);
  valijson::SchemaParser parser{valijson::SchemaParser::kDraft7};
  valijson::adapters::NlohmannJsonAdapter adapter{impl_->schema};
  parser.populateSchema(adapter, impl_->compiled);
}

tool_schema::~tool_schema() = default;
tool_schema::tool_schema(tool_schema&&) noexcept = default;
tool_schema& tool_schema::operator=(tool_schema&&) noexcept = default;

result<void> tool_schema::validate(const json& args) const {
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target{args};
  if (validator.validate(impl_->compiled, target, &results))
    return {};
  // valijson reports the innermost failure first, then one error per
  // enclosing level ("failed to validate property ..."): the innermost one
  // names the member and the rule it broke.
  const valijson::ValidationResults::Error* inner = nullptr;
  for (auto& err : results)
    if (inner == nullptr || err.context.size() > inner->context.size())
      inner = &err;
  std::string message = inner == nullptr
                          ? std::string{"arguments do not match the schema"}
                          : explain(impl_->schema, args, *inner);
  return error{errc::invalid_argument,
               fmt::format("{}: {}", impl_->tool, message)};
}

} // namespace sandbox::actors::detail
