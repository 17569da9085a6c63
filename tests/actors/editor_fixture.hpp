#pragma once

// The fixture of the file_editor suites (actors.tools_file_editor,
// actors.tools_file_conflicts): a session, its toolbox and the session's
// working directory, with builders of the calls' arguments.

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "fixture.hpp"
#include "sandbox/tools/tools.hpp"

namespace sandbox::test {

using nlohmann::json;

struct editor_fixture : node_fixture {
  sandbox::actors::blocking_session s;
  actors::toolbox tb;
  std::string work;

  explicit editor_fixture(actors::toolbox_options opts = {})
    : s(make_session()), tb(s, opts), work(dir.path + "/work") {
  }

  /// Calls file_editor; the call itself must not be refused.
  actors::tool_result edit(const json& args) {
    auto r = tb.call("file_editor", args);
    if (!r)
      CAF_FAIL("refused: " << r.error().message);
    return std::move(*r);
  }

  /// A failed call's message; it must have failed with `code`.
  std::string failure(const json& args, const std::string& code) {
    auto r = edit(args);
    CAF_CHECK(r.is_error);
    CAF_CHECK_EQUAL(r.structured["error"], code);
    CAF_CHECK_EQUAL(r.structured["message"], r.text);
    return r.text;
  }

  std::string slurp(const std::string& path) {
    std::ifstream in{path, std::ios::binary};
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  void put(const std::string& path, const std::string& bytes) {
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out << bytes;
  }

  bool exists(const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
  }
};

inline json view(const std::string& path) {
  return {{"command", "view"}, {"path", path}};
}

inline json view(const std::string& path, int64_t first, int64_t last) {
  return {{"command", "view"}, {"path", path}, {"view_range", {first, last}}};
}

inline json create(const std::string& path, const std::string& text) {
  return {{"command", "create"}, {"path", path}, {"file_text", text}};
}

inline json replace(const std::string& path, const std::string& old_str,
                    const std::string& new_str) {
  return {{"command", "str_replace"},
          {"path", path},
          {"old_str", old_str},
          {"new_str", new_str}};
}

inline json insert(const std::string& path, int64_t line,
                   const std::string& text) {
  return {{"command", "insert"},
          {"path", path},
          {"insert_line", line},
          {"new_str", text}};
}

inline json undo(const std::string& path) {
  return {{"command", "undo_edit"}, {"path", path}};
}

inline constexpr const char* review
  = "Review the changes; edit again or use "
    "undo_edit if they are not as expected.\n";

} // namespace sandbox::test
