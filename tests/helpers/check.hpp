#pragma once

// Included by every suite right after caf/test/unit_test.hpp.
//
// CAF 0.17's CAF_CHECK_FUNC (behind CAF_CHECK_EQUAL and friends) binds its
// operands with `auto&&`: `CAF_CHECK_EQUAL(s.execute(cmd)->exit_code, 0)`
// keeps a reference into a temporary that is gone before the comparison
// (AddressSanitizer: stack-use-after-scope; GCC: -Wdangling-pointer). This
// version copies both operands first, so a check on a member of a returned
// value is safe.

#include <type_traits>

#include "caf/test/unit_test.hpp"

#undef CAF_CHECK_FUNC
#define CAF_CHECK_FUNC(func, x_expr, y_expr)                                   \
  do {                                                                         \
    func comparator;                                                           \
    std::decay_t<decltype(x_expr)> x_val___ = x_expr;                          \
    std::decay_t<decltype(y_expr)> y_val___ = y_expr;                          \
    static_cast<void>(::caf::test::detail::check(                              \
      ::caf::test::engine::current_test(), __FILE__, __LINE__,                 \
      CAF_FUNC_EXPR(func, x_expr, y_expr), false,                              \
      comparator(x_val___, y_val___), x_val___, y_val___));                    \
    ::caf::test::engine::last_check_file(__FILE__);                            \
    ::caf::test::engine::last_check_line(__LINE__);                            \
  } while (false)

#undef CAF_REQUIRE_FUNC
#define CAF_REQUIRE_FUNC(func, x_expr, y_expr)                                 \
  do {                                                                         \
    func comparator;                                                           \
    std::decay_t<decltype(x_expr)> x_val___ = x_expr;                          \
    std::decay_t<decltype(y_expr)> y_val___ = y_expr;                          \
    auto CAF_UNIQUE(__result) = ::caf::test::detail::check(                    \
      ::caf::test::engine::current_test(), __FILE__, __LINE__,                 \
      CAF_FUNC_EXPR(func, x_expr, y_expr), false,                              \
      comparator(x_val___, y_val___), x_val___, y_val___);                     \
    if (!CAF_UNIQUE(__result))                                                 \
      ::caf::test::detail::requirement_failed(                                 \
        CAF_FUNC_EXPR(func, x_expr, y_expr));                                  \
    ::caf::test::engine::last_check_file(__FILE__);                            \
    ::caf::test::engine::last_check_line(__LINE__);                            \
  } while (false)

// Sanitizer builds (`make test-asan`, `make test-tsan`) keep shadow memory
// and a quarantine of freed blocks, so resident memory grows with every
// allocation whatever our code does: memory bounds are checked in plain
// builds only (the flows around them still run under the sanitizers).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#  define SANDBOX_TEST_SANITIZED 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#    define SANDBOX_TEST_SANITIZED 1
#  endif
#endif

/// Checks `x < limit` for a memory figure, except in sanitizer builds
/// (which still compile `x` unevaluated, so what it names counts as used).
#ifdef SANDBOX_TEST_SANITIZED
#  define SANDBOX_CHECK_MEMORY_BOUND(x, limit)                                 \
    do {                                                                       \
      static_cast<void>(sizeof(x));                                            \
      CAF_MESSAGE("memory bound not checked in a sanitizer build");            \
    } while (false)
#else
#  define SANDBOX_CHECK_MEMORY_BOUND(x, limit) CAF_CHECK_LESS(x, limit)
#endif

/// Returns from a test that exists to bound memory, in sanitizer builds:
/// its bound is not checked there (above), so moving its volume through a
/// sanitized build would only cost time. It says why.
#ifdef SANDBOX_TEST_SANITIZED
#  define SANDBOX_SKIP_MEMORY_TEST_IF_SANITIZED()                              \
    do {                                                                       \
      CAF_MESSAGE("skipped: a memory bound is not checked in a sanitizer "     \
                  "build");                                                    \
      return;                                                                  \
    } while (false)
#else
#  define SANDBOX_SKIP_MEMORY_TEST_IF_SANITIZED()                              \
    do {                                                                       \
    } while (false)
#endif

/// Requires that a `sandbox::result` holds a value; prints the error if not.
#define SANDBOX_REQUIRE_OK(expr)                                               \
  do {                                                                         \
    if (!(expr))                                                               \
      CAF_FAIL(#expr " failed: " << (expr).error().message);                   \
  } while (false)

/// Checks that a `sandbox::result` holds a value; fails the test naming the
/// error if not, but lets it go on (a failed requirement aborts the whole
/// test program): for a callback or a call that must still be waited for.
/// Guard each later use (`r && *r`).
#define SANDBOX_CHECK_OK(expr)                                                 \
  do {                                                                         \
    auto&& sandbox_checked_ = (expr);                                          \
    if (!sandbox_checked_)                                                     \
      CAF_ERROR(#expr " failed: " << sandbox_checked_.error().message);        \
  } while (false)

/// A check that says why it failed (`msg` is streamed, as for CAF_ERROR).
#define CHECK_THAT(cond, msg)                                                  \
  do {                                                                         \
    if (!(cond))                                                               \
      CAF_ERROR(msg);                                                          \
  } while (false)

/// A requirement that says why it failed (`msg` is streamed, as for
/// CAF_FAIL).
#define REQUIRE_THAT(cond, msg)                                                \
  do {                                                                         \
    if (!(cond))                                                               \
      CAF_FAIL(msg);                                                           \
  } while (false)
