#pragma once

// Bearer tokens and the identities they name (private; docs/http.md,
// "Tokens"). A token file holds lines `IDENTITY TOKEN`; blank lines and
// lines starting with '#' are skipped.

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/errc.hpp"

namespace sandbox::http {

class token_store {
public:
  /// Parses the text of a token file. `invalid_argument` names the file
  /// and line of the first malformed line, a token shorter than 16
  /// characters, or a token given twice.
  static result<std::vector<std::pair<std::string, std::string>>>
  parse(std::string_view text, const std::string& file);

  /// Reads `file` (with `parse`) and replaces the tokens; on an error the
  /// old ones stay. Returns how many tokens there are.
  result<size_t> load(const std::string& file);

  /// Makes one random token for `identity` and writes it to `file` (mode
  /// 0600, replaced atomically).
  result<void> generate(const std::string& identity, const std::string& file);

  /// The identity of a request's `Authorization` field value; none for a
  /// missing, malformed or unknown token. Compares in constant time.
  std::optional<std::string> identify(std::string_view authorization) const;

private:
  mutable std::mutex mtx_;
  std::vector<std::pair<std::string, std::string>> tokens_;
};

} // namespace sandbox::http
