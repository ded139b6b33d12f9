// Adaptive staging's moving average while an event goes direct: updated at
// rejects only, with the accepts since the thread's previous reject caught
// up from its kept_direct count (core/adaptive_average.h,
// Instance::adaptive_direct_rejected). Checked against the rule written out
// per emit (docs/core.md, "Adaptive staging"): the catch-up equals single
// steps, and a whole instance takes, emit by emit, the path a model that
// steps at every emit predicts.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "core/adaptive_average.h"
#include "core/instance.h"
#include "adaptive_model.h"
#include "test_events.h"

using namespace tracepipe;
using namespace tp_core_test;

TEST_CASE("adaptive average: catching up n accepts equals n single steps", "[core][adaptive]") {
  const uint64_t ns[] = {0, 1, 2, 31, 32, 33, 100, 200, 239, 240, 241, 250, 300};
  uint64_t checks = 0;
  uint64_t longest = 0;  // steps from any s until accepts stop moving it
  for (int64_t s0 = 0; s0 <= 65536; ++s0) {
    int64_t s = s0;
    uint64_t n = 0;
    size_t next = 0;
    uint64_t moved = 0;
    for (; n <= 300; ++n) {
      if (next < std::size(ns) && ns[next] == n) {
        if (detail::adaptive_average_after_accepts(s0, n) != s) {
          INFO("s0 " << s0 << " n " << n);
          REQUIRE(detail::adaptive_average_after_accepts(s0, n) == s);
        }
        ++next;
        ++checks;
      }
      const int64_t t = detail::adaptive_average_step(s, true);
      if (t != s) moved = n + 1;
      REQUIRE(t >= s);
      REQUIRE(t <= 65536);
      s = t;
    }
    longest = std::max(longest, moved);
    // However many accepts: the loop stops where single steps stop moving.
    REQUIRE(detail::adaptive_average_after_accepts(s0, UINT64_MAX) == s);
    REQUIRE(65536 - s < 32);
  }
  CHECK(checks == 65537 * std::size(ns));
  // The bound the header states, so a reject's catch-up is short.
  CHECK(longest == 259);
  // A reject step rounds towards minus infinity: from 65536, 1/32 off.
  CHECK(detail::adaptive_average_step(65536, false) == 63488);
  CHECK(detail::adaptive_average_step(63488, false) == 61504);
  CHECK(detail::adaptive_average_step(1, false) == 0);
  CHECK(detail::adaptive_average_step(0, false) == 0);
  CHECK(detail::adaptive_average_step(65535, true) == 65535);  // the step rounds to 0
  CHECK(detail::adaptive_average_step(0, true) == 2048);
}

TEST_CASE("adaptive average: the score word packs s, the count's mark and the period", "[core][adaptive]") {
  using detail::AdaptiveScore;
  const uint64_t w = AdaptiveScore::pack(65536, (uint64_t{1} << 31) + 5, 0x12345);
  const AdaptiveScore a = AdaptiveScore::unpack(w);
  CHECK(a.s == 65536);
  CHECK(a.mark == 5);          // mod 2^31
  CHECK(a.period == 0x2345);   // mod 2^16
  CHECK(AdaptiveScore::unpack(AdaptiveScore::pack(0, 0, 0)).s == 0);
  CHECK(AdaptiveScore::unpack(AdaptiveScore::pack(0x1ffff, ~uint64_t{0}, ~uint64_t{0})).mark == (uint64_t{1} << 31) - 1);

  // A reject: the accepts since the mark caught up, then one reject step;
  // the new word's mark is the count given.
  const uint64_t w0 = AdaptiveScore::pack(40000, 100, 7);
  const AdaptiveScore r = AdaptiveScore::unpack(detail::adaptive_score_after_reject(w0, 131, 7));
  CHECK(r.s == detail::adaptive_average_step(detail::adaptive_average_after_accepts(40000, 31), false));
  CHECK(r.mark == 131);
  CHECK(r.period == 7);
  // No accept since: the reject alone.
  CHECK(AdaptiveScore::unpack(detail::adaptive_score_after_reject(w0, 100, 7)).s ==
        detail::adaptive_average_step(40000, false));
  // Another period (also one that differs only above bit 15 is the same):
  // start again at 65536.
  CHECK(AdaptiveScore::unpack(detail::adaptive_score_after_reject(w0, 131, 8)).s == 63488);
  CHECK(AdaptiveScore::unpack(detail::adaptive_score_after_reject(w0, 131, 7 + 0x10000)).s ==
        r.s);
  // The count wrapped past 2^31 since the mark: still the right difference.
  const uint64_t wm = AdaptiveScore::pack(40000, (uint64_t{1} << 31) - 3, 7);
  CHECK(AdaptiveScore::unpack(detail::adaptive_score_after_reject(wm, (uint64_t{1} << 31) + 28, 7)).s == r.s);
}

TEST_CASE("adaptive average: every emit takes the path a per-emit step predicts", "[core][adaptive]") {
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
          buffers::StagedRecord held = inst.stager_for_testing().thread_slots().try_claim(0, 8);
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
