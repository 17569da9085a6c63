#pragma once

// Tells ThreadSanitizer about a hand-over between threads that it cannot
// see: CAF 0.17 is not instrumented, so a buffer that one thread fills and
// sends in a message and another thread uses after receiving it looks like
// a race. `release` before the send and `acquire` after the receipt, on the
// same address, give TSan the edge. Both do nothing in other builds.

#if defined(__SANITIZE_THREAD__)
#  define SANDBOX_TSAN 1
#elif defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define SANDBOX_TSAN 1
#  endif
#endif

#ifdef SANDBOX_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace sandbox::detail {

inline void tsan_release([[maybe_unused]] const void* addr) noexcept {
#ifdef SANDBOX_TSAN
  __tsan_release(const_cast<void*>(addr));
#endif
}

inline void tsan_acquire([[maybe_unused]] const void* addr) noexcept {
#ifdef SANDBOX_TSAN
  __tsan_acquire(const_cast<void*>(addr));
#endif
}

} // namespace sandbox::detail
