#pragma once
// The acceptance average an adaptive event keeps per thread while it goes
// direct (Staging::adaptive; docs/core.md, "Adaptive staging"). Pure
// functions: Instance::adaptive_direct_rejected applies them to the thread's
// counter slots (slot::adaptive_score, slot::adaptive_direct_mark).
#include <cstdint>

namespace tracepipe::detail {

/// One event's step of the average s, in 1/65536 (0 = every event rejected,
/// 65536 = every event accepted): s += (target - s) / 32, rounded down
/// (towards minus infinity), target 65536 for an accept and 0 for a reject,
/// so about the last 32 events weigh in. s stays in [0, 65536].
[[nodiscard]] constexpr int64_t adaptive_average_step(int64_t s, bool accepted) noexcept {
  return s + (((accepted ? 65536 : 0) - s) >> 5);
}

/// s after `accepts` accept steps, as many single steps would leave it. An
/// accept stops moving s once 65536 - s < 32 (the step rounds to 0), which
/// takes at most 259 steps from any s (tests/core/adaptive_average_test.cc),
/// so the loop runs at most that often whatever `accepts` is. Used at a reject, to catch up the accepts since
/// the thread's previous reject: an accepted direct emit then pays nothing
/// for the policy.
[[nodiscard]] constexpr int64_t adaptive_average_after_accepts(int64_t s, uint64_t accepts) noexcept {
  for (; accepts != 0; --accepts) {
    const int64_t next = adaptive_average_step(s, true);
    if (next == s) break;
    s = next;
  }
  return s;
}

}  // namespace tracepipe::detail
