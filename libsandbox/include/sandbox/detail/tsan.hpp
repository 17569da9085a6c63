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

/// The address of every hand-over through CAF that no single buffer names:
/// the file pool's results reach a blocking caller in a message of a
/// message, a caller's request reaches a file-pool job the same way. The
/// threads of our own at the edges of CAF (blocking callers before a
/// request and after its answer, file-pool jobs and reactor callbacks
/// around their messages) release and acquire it, which orders what each
/// side did before a message against what the other does after it. (It
/// orders more than the one message, so a race between two such edges of
/// different messages can hide; actor threads are not checked against
/// either anyway: tests/sanitizers/tsan.supp.)
inline char caf_handover_token;

inline void tsan_release_handover() noexcept {
  tsan_release(&caf_handover_token);
}

inline void tsan_acquire_handover() noexcept {
  tsan_acquire(&caf_handover_token);
}

} // namespace sandbox::detail
