#pragma once
// The acceptance average an adaptive event keeps per thread while it goes
// direct (Staging::adaptive; docs/instance.md, "Adaptive staging"). Pure
// functions: Instance::adaptive_direct_rejected applies them to the thread's
// counter slot detail::slot::adaptive_score.
#include <cstdint>

namespace tracepipe::detail {

/// One event's step of the average s, in 1/65536 (0 = every event rejected,
/// 65536 = every event accepted): s += (target - s) / 32, rounded down
/// (towards minus infinity), target 65536 for an accept and 0 for a reject,
/// so about the last 32 events weigh in. s stays in [0, 65536]. A reject
/// steps s this way; accepts are caught up in one go at the next reject
/// (adaptive_average_after_accepts).
[[nodiscard]] constexpr int64_t adaptive_average_step(int64_t s, bool accepted) noexcept {
  return s + (((accepted ? 65536 : 0) - s) >> 5);
}

/// Accepts after which an accept run leaves no distance to 65536:
/// 65536 * (31/32)^k < 1 from k = 350 on.
inline constexpr uint32_t kAdaptiveDecayLen = 352;

/// (31/32)^k in 1/2^31, k < kAdaptiveDecayLen, rounded to nearest: the
/// share of its distance to 65536 that s keeps after k accepts.
struct AdaptiveDecayTable {
  uint32_t v[kAdaptiveDecayLen];
  constexpr AdaptiveDecayTable() noexcept : v{} {
    double p = 1.0;  // each product is exact to 2^-50 or so: far below the table's 2^-31
    for (uint32_t k = 0; k < kAdaptiveDecayLen; ++k, p *= 31.0 / 32.0)
      v[k] = static_cast<uint32_t>(p * 2147483648.0 + 0.5);
  }
};
inline constexpr AdaptiveDecayTable kAdaptiveDecay{};
static_assert(kAdaptiveDecay.v[0] == (uint32_t{1} << 31) &&
              kAdaptiveDecay.v[1] == (uint32_t{31} << 26));
// The clamp below is exact: the last entry already takes every s to 65536.
static_assert((uint64_t{65536} * kAdaptiveDecay.v[kAdaptiveDecayLen - 1]) >> 31 == 0);

/// s after a run of `accepts` accepts: its distance to 65536 times
/// (31/32)^accepts, what as many steps give in exact arithmetic, rounded
/// once (the distance down) instead of once per step. A table load and a
/// multiply, whatever the run's length: it is done at a reject, for the
/// accepts since the thread's previous one, so an accepted direct emit pays
/// nothing for the policy and a reject pays no loop over the run (the loop
/// of single steps it replaced cost a few cycles per accept caught up). The
/// distance
/// is floor(d * (31/32)^k) up to the table's rounding (the product is off by
/// less than 2^-15, so a few dozen of the 65537 x 352 pairs of s and k come
/// out one off); single steps, which round at every step and stop moving
/// within 32 of 65536, would leave s up to 31 lower, so a flip back to
/// staging can come a reject later than they would have it
/// (tests/core/instance/adaptive_average_test.cc checks both bounds).
[[nodiscard]] constexpr int64_t adaptive_average_after_accepts(int64_t s,
                                                               uint64_t accepts) noexcept {
  if (accepts >= kAdaptiveDecayLen) return 65536;
  const uint64_t d = static_cast<uint64_t>(65536 - s);
  return 65536 - static_cast<int64_t>((d * kAdaptiveDecay.v[accepts]) >> 31);
}

/// The thread's average and what its next reject needs, as one word
/// (detail::slot::adaptive_score), so that a reject replaces it with one
/// compare-exchange (Instance::adaptive_direct_rejected) and a same-event
/// emit in a signal handler inside the reject cannot leave half of its
/// update. Two slots, a score and a mark, could pair one reject's score with
/// another's mark (found by a review: a handler reject inside a reject
/// dropped every accept since the previous one).
///   bits  0..16  s, in 1/65536
///   bits 17..47  the thread's kept_direct count when s was last set, mod 2^31
///   bits 48..63  the direct period s belongs to (detail::EventState::kGenShift), mod 2^16
/// Both wraps are benign: 2^31 or more accepts between two rejects of one
/// thread are counted mod 2^31 (a shortfall only if the remainder is under
/// 350, when the average comes out low); a score from 2^16·k periods earlier
/// is taken as current, and its catch-up over every accept since then
/// brings it towards the 65536 a fresh period starts from (to it exactly
/// after 350 accepts).
struct AdaptiveScore {
  static constexpr uint64_t kMarkMask = (uint64_t{1} << 31) - 1;
  static constexpr uint64_t kPeriodMask = 0xffff;
  int64_t s;
  uint64_t mark;    ///< kept_direct mod 2^31
  uint64_t period;  ///< mod 2^16

  [[nodiscard]] static constexpr AdaptiveScore unpack(uint64_t w) noexcept {
    return {static_cast<int64_t>(w & 0x1ffff), (w >> 17) & kMarkMask, w >> 48};
  }
  [[nodiscard]] static constexpr uint64_t pack(int64_t s, uint64_t kept, uint64_t period) noexcept {
    return static_cast<uint64_t>(s) | ((kept & kMarkMask) << 17) | ((period & kPeriodMask) << 48);
  }
};

/// The word after one reject of the thread's direct emit: the accepts since
/// the word was set (kept - mark) caught up, then the reject's step; a word
/// from another period starts again at 65536 (the period began because
/// events were accepted). `kept` is the thread's kept_direct count, `period`
/// the event's current one (flags >> detail::EventState::kGenShift).
[[nodiscard]] constexpr uint64_t adaptive_score_after_reject(uint64_t word, uint64_t kept,
                                                             uint64_t period) noexcept {
  const AdaptiveScore a = AdaptiveScore::unpack(word);
  int64_t s = 65536;
  if (a.period == (period & AdaptiveScore::kPeriodMask))
    s = adaptive_average_after_accepts(a.s, (kept - a.mark) & AdaptiveScore::kMarkMask);
  return AdaptiveScore::pack(adaptive_average_step(s, false), kept, period);
}

}  // namespace tracepipe::detail
