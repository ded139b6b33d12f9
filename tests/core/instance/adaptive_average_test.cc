// Adaptive staging's moving average while an event goes direct: updated at
// rejects only, with the accepts since the thread's previous reject caught
// up from its kept_direct count (core/instance/adaptive_average.h,
// Instance::adaptive_direct_rejected). Checked against the rule written out
// per emit (docs/instance.md, "Adaptive staging"): the catch-up is the exact
// decay rounded once, and a whole instance takes, emit by emit, the path a
// model that counts each emit predicts (tests/core/instance/adaptive_model.h).
#include "tracepipe/core/instance/adaptive_average.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>

#include "adaptive_model.h"
#include "test_events.h"
#include "tracepipe/core/instance/instance.h"

using namespace tracepipe;
using namespace tp_core_test;

TEST_CASE(
    "adaptive average: a run of n accepts decays the distance to 65536 by (31/32)^n, rounded once",
    "[core][adaptive]") {
  // The table against the real powers.
  for (uint32_t k = 0; k < detail::kAdaptiveDecayLen; ++k) {
    const long double want = std::pow(31.0L / 32.0L, static_cast<long double>(k)) * 2147483648.0L;
    INFO("k " << k);
    REQUIRE(std::fabs(static_cast<long double>(detail::kAdaptiveDecay.v[k]) - want) <= 0.5L);
  }
  const uint64_t ns[] = {0,   1,   2,   31,  32,  33,  100, 200, 259,
                         300, 348, 349, 350, 351, 352, 353, 1000};
  uint64_t checks = 0;
  int64_t widest = 0;  // how far above single steps the run's one rounding leaves s
  for (int64_t s0 = 0; s0 <= 65536; ++s0) {
    const long double d = static_cast<long double>(65536 - s0);
    int64_t stepped = s0;  // single steps, each rounded
    int64_t prev = s0;
    size_t next = 0;
    for (uint64_t n = 0; n <= 1000; ++n) {
      if (next < std::size(ns) && ns[next] == n) {
        const int64_t s = detail::adaptive_average_after_accepts(s0, n);
        const long double exact = d * std::pow(31.0L / 32.0L, static_cast<long double>(n));
        const long double dist = static_cast<long double>(65536 - s);
        // floor(exact), up to the table's 2^-31 rounding times d < 2^-15.
        if (!(dist > exact - 1.0L && dist <= exact + 0x1p-15L) || s < stepped || s < prev ||
            s > 65536) {
          INFO("s0 " << s0 << " n " << n << " s " << s << " exact distance "
                     << static_cast<double>(exact) << " single steps " << stepped << " previous n "
                     << prev);
          REQUIRE(false);
        }
        widest = std::max(widest, s - stepped);
        prev = s;
        ++next;
        ++checks;
      }
      stepped = detail::adaptive_average_step(stepped, true);
    }
  }
  CHECK(checks == 65537 * std::size(ns));
  // Single steps stop moving within 32 of 65536; the run's one rounding does
  // not, so it ends up to 31 above them.
  CHECK(widest == 31);
  CHECK(detail::adaptive_average_after_accepts(12345, 0) == 12345);
  CHECK(detail::adaptive_average_after_accepts(0, 1) == 2048);  // one accept: exactly a step
  CHECK(detail::adaptive_average_after_accepts(40000, 1) ==
        detail::adaptive_average_step(40000, true));
  // From 0, 350 accepts are the first that leave no distance.
  CHECK(detail::adaptive_average_after_accepts(0, 349) == 65535);
  CHECK(detail::adaptive_average_after_accepts(0, 350) == 65536);
  CHECK(detail::adaptive_average_after_accepts(0, UINT64_MAX) == 65536);
  // A reject step rounds towards minus infinity: from 65536, 1/32 off.
  CHECK(detail::adaptive_average_step(65536, false) == 63488);
  CHECK(detail::adaptive_average_step(63488, false) == 61504);
  CHECK(detail::adaptive_average_step(1, false) == 0);
  CHECK(detail::adaptive_average_step(0, false) == 0);
  CHECK(detail::adaptive_average_step(65535, true) == 65535);  // the step rounds to 0
  CHECK(detail::adaptive_average_step(0, true) == 2048);
}

TEST_CASE("adaptive average: the score word packs s, the count's mark and the period",
          "[core][adaptive]") {
  using detail::AdaptiveScore;
  const uint64_t w = AdaptiveScore::pack(65536, (uint64_t{1} << 31) + 5, 0x12345);
  const AdaptiveScore a = AdaptiveScore::unpack(w);
  CHECK(a.s == 65536);
  CHECK(a.mark == 5);         // mod 2^31
  CHECK(a.period == 0x2345);  // mod 2^16
  CHECK(AdaptiveScore::unpack(AdaptiveScore::pack(0, 0, 0)).s == 0);
  CHECK(AdaptiveScore::unpack(AdaptiveScore::pack(0x1ffff, ~uint64_t{0}, ~uint64_t{0})).mark ==
        (uint64_t{1} << 31) - 1);

  // A reject: the accepts since the mark caught up, then one reject step;
  // the new word's mark is the count given.
  const uint64_t w0 = AdaptiveScore::pack(40000, 100, 7);
  const AdaptiveScore r = AdaptiveScore::unpack(detail::adaptive_score_after_reject(w0, 131, 7));
  CHECK(r.s ==
        detail::adaptive_average_step(detail::adaptive_average_after_accepts(40000, 31), false));
  CHECK(r.mark == 131);
  CHECK(r.period == 7);
  // No accept since: the reject alone.
  CHECK(AdaptiveScore::unpack(detail::adaptive_score_after_reject(w0, 100, 7)).s ==
        detail::adaptive_average_step(40000, false));
  // Another period (also one that differs only above bit 15 is the same):
  // start again at 65536.
  CHECK(AdaptiveScore::unpack(detail::adaptive_score_after_reject(w0, 131, 8)).s == 63488);
  CHECK(AdaptiveScore::unpack(detail::adaptive_score_after_reject(w0, 131, 7 + 0x10000)).s == r.s);
  // The count wrapped past 2^31 since the mark: still the right difference.
  const uint64_t wm = AdaptiveScore::pack(40000, (uint64_t{1} << 31) - 3, 7);
  CHECK(AdaptiveScore::unpack(detail::adaptive_score_after_reject(wm, (uint64_t{1} << 31) + 28, 7))
            .s == r.s);
}

TEST_CASE("adaptive average: every emit takes the path the per-emit model predicts",
          "[core][adaptive]") {
  const double threshold = GENERATE(0.9, 0.5, 0.97, 0.0);
  const uint64_t seed = GENERATE(1u, 2u, 3u);
  CAPTURE(threshold, seed);
  InstanceOptions o = small_options(Staging::adaptive, BufferMode::overwrite);
  o.adaptive_threshold = threshold;
  Instance inst(o);
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  prepare_thread();
  Model m{static_cast<uint64_t>(threshold * 65536.0)};
  ThreadModel thread;
  std::mt19937_64 rng(seed);
  // Phases of 400 emits, each at one acceptance rate (in 1/100), around and
  // far from the threshold, and runs of pure accepts long enough for the
  // catch-up to saturate.
  const uint32_t rates[] = {100, 95, 90, 85, 99, 50, 100, 0, 92, 100, 97, 10, 88, 100};
  uint64_t direct = 0, staged = 0, flips = 0, emits = 0, nested = 0;
  bool last_direct = false;
  for (int round = 0; round < 3; ++round)
    for (uint32_t rate : rates)
      for (int i = 0; i < 400; ++i) {
        const bool accept = rng() % 100 < rate;
        const bool want_direct = m.emit(thread, accept, false).first;
        const EmitResult r = emit_sample(inst, accept ? 1 : 0, static_cast<uint32_t>(i), "");
        REQUIRE(r == (accept ? EmitResult::kept : EmitResult::discarded));
        const EventStats s = inst.event_stats(Sample::desc());
        const bool went_direct = s.direct == direct + 1;
        INFO("emit " << emits << " accept " << accept << " rate " << rate);
        REQUIRE(s.direct + s.staged == direct + staged + 1);
        REQUIRE(went_direct == want_direct);
        direct = s.direct;
        staged = s.staged;
        if (went_direct != last_direct) ++flips;
        last_direct = went_direct;
        ++emits;
        // Now and then while staging, an accepted emit with the thread's slot
        // busy (as a nested one finds it): direct and kept, but not the
        // policy's evidence, so it must not count as an accept of the next
        // direct period's average.
        if (!m.direct && i % 37 == 0) {
          buffers::StagedRecord held =
              tracepipe::detail::InstanceAccess::stager(inst).thread_slots().try_claim(0, 8);
          REQUIRE(held);
          const EmitResult rn = emit_sample(inst, 1, 0, "");
          buffers::PerThreadTempBuffer::release(held);
          REQUIRE(rn == EmitResult::kept);
          const EventStats sn = inst.event_stats(Sample::desc());
          REQUIRE(sn.nested == ++nested);
          REQUIRE(sn.direct == direct + 1);
          direct = sn.direct;
          ++emits;
        }
      }
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.emitted() == emits);
  CHECK(s.adaptive_direct == s.direct - nested);
  CHECK(nested > (threshold > 0 ? 50u : 10u));
  CHECK(s.lost == 0);
  // The sequence did exercise both choices and the flips between them.
  CHECK(s.direct > 1000);
  // At threshold 0 only a long run of rejects brings staging back (the
  // average must fall to 0: ~390 rejects in a row from 65536).
  CHECK(s.staged > (threshold > 0 ? 1000u : 500u));
  CHECK(flips >= (threshold > 0 ? 4u : 2u));
}
