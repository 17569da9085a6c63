#pragma once

// What the suites ask of the violations that an execution or a session
// reports (docs/security.md): how many of a kind there are, for which
// execution, with which detail. One place, so that every suite matches a
// detail the same way. Include after caf/test/unit_test.hpp.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sandbox/execution.hpp"

namespace sandbox::test {

/// The violations of `kind` in `v` for which `match(violation)` holds.
template <class Match>
size_t count_violations_if(const std::vector<violation>& v, violation_kind kind,
                           Match match) {
  size_t n = 0;
  for (auto& x : v)
    if (x.kind == kind && match(x))
      ++n;
  return n;
}

/// The violations of `kind` in `v`, whatever their detail.
inline size_t count_violations(const std::vector<violation>& v,
                               violation_kind kind) {
  return count_violations_if(v, kind, [](const violation&) { return true; });
}

/// The violations of `kind` in `v` whose detail is `detail`.
inline size_t count_violations(const std::vector<violation>& v,
                               violation_kind kind, const std::string& detail) {
  return count_violations_if(v, kind, [&](const violation& x) {
    return x.detail == detail;
  });
}

/// Whether `v` holds a violation of `kind`.
inline bool has_violation(const std::vector<violation>& v,
                          violation_kind kind) {
  return count_violations(v, kind) > 0;
}

/// Whether `v` holds a violation of `kind` whose detail is `detail`.
inline bool has_violation(const std::vector<violation>& v, violation_kind kind,
                          const std::string& detail) {
  return count_violations(v, kind, detail) > 0;
}

/// Whether `v` holds a violation of `kind` of the execution numbered
/// `execution` in its session.
inline bool has_violation_in(const std::vector<violation>& v,
                             violation_kind kind, uint64_t execution) {
  return count_violations_if(v, kind,
                             [&](const violation& x) {
                               return x.execution == execution;
                             })
         > 0;
}

/// Whether `v` holds a violation of `kind` whose detail starts with
/// `prefix`.
inline bool has_detail_prefix(const std::vector<violation>& v,
                              violation_kind kind, const std::string& prefix) {
  return count_violations_if(v, kind,
                             [&](const violation& x) {
                               return x.detail.compare(0, prefix.size(), prefix)
                                      == 0;
                             })
         > 0;
}

/// Whether `v` holds a violation of `kind` whose detail contains `part`.
inline bool has_detail_part(const std::vector<violation>& v,
                            violation_kind kind, const std::string& part) {
  return count_violations_if(v, kind,
                             [&](const violation& x) {
                               return x.detail.find(part) != std::string::npos;
                             })
         > 0;
}

/// `has_violation(v, kind, detail)`, which, when false, says in the test's
/// output what was reported instead.
inline bool reported(const std::vector<violation>& v, violation_kind kind,
                     const std::string& detail) {
  if (has_violation(v, kind, detail))
    return true;
  CAF_MESSAGE("not reported: " << detail);
  for (auto& x : v)
    CAF_MESSAGE("  reported: " << to_string(x.kind) << " " << x.detail);
  return false;
}

} // namespace sandbox::test
