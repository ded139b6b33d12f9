// The inline TSC clock: scale_tsc's arithmetic (signed differences, the
// fixed shift, equal to the variable-shift conversion it replaced at every
// end of the signed range), the calibration's mult bound, and FunctionClock
// reading it without calling its function.
#include "tracepipe/buffers/tsc_clock.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>

#include "test_support.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/ring_buffer.h"

using namespace tracepipe::buffers;

namespace {
std::atomic<uint64_t> g_calls{0};
uint64_t counting_clock() noexcept {
  return 1000 + g_calls.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

TEST_CASE("tsc_clock: scale_tsc maps cycles to ns, signed around the base", "[buffers][clock]") {
  // A 3 GHz counter: mult = 2^32 / 3 (rounded down), so 3000 cycles are
  // 999 ns (999.99..., truncated) and -3000 cycles are -1000 ns (the
  // arithmetic shift rounds toward minus infinity).
  const TscScale s{1'000'000, 5'000'000'000, (uint64_t{1} << 32) / 3};
  CHECK(scale_tsc(s, 1'000'000) == 5'000'000'000);
  CHECK(scale_tsc(s, 1'003'000) == 5'000'000'999);
  CHECK(scale_tsc(s, 997'000) == 4'999'999'000);
  CHECK(scale_tsc(s, 1'000'003) == 5'000'000'000);  // 0.99... ns
  // 2^40 cycles ahead: the 128-bit product does not overflow.
  CHECK(scale_tsc(s, 1'000'000 + (uint64_t{1} << 40)) == 5'000'000'000 + 366'503'875'840);
  // 1 ns per cycle is the identity around the base.
  const TscScale one{500, 700, uint64_t{1} << TscScale::kShift};
  CHECK(scale_tsc(one, 500) == 700);
  CHECK(scale_tsc(one, 12'345) == 12'545);
  CHECK(scale_tsc(one, 0) == 200);
}

TEST_CASE("tsc_clock: FunctionClock with a scale reads the TSC inline, without its function",
          "[buffers][clock]") {
  const FunctionClock plain(&counting_clock);
  const uint64_t calls = g_calls.load();
  CHECK(plain() == 1000 + calls);
  CHECK(g_calls.load() == calls + 1);
  if (!kHaveTsc) TP_SKIP("no TSC on this architecture: FunctionClock always calls its function");

  // 1 ns per cycle from base 0: the clock reads the counter itself.
  const FunctionClock tsc(&counting_clock, TscScale{0, 0, uint64_t{1} << TscScale::kShift});
  REQUIRE(tsc.inline_tsc);
  const uint64_t before = read_tsc();
  const uint64_t t = tsc();
  const uint64_t after = read_tsc();
  CHECK(g_calls.load() == calls + 1);  // not called
  CHECK(t >= before);
  CHECK(t <= after);

  // A ring stamps its records with it.
  RingBuffer<OverflowMode::overwrite, FunctionClock> rb(RingBufferConfig{1, 64 * 1024, 4096}, tsc);
  const uint64_t b = read_tsc();
  for (int i = 0; i < 3; ++i) {
    Reservation r = rb.reserve(0, 8);
    REQUIRE(r);
    rb.commit(r);
  }
  const uint64_t a = read_tsc();
  CHECK(g_calls.load() == calls + 1);
  ConsumingReader reader(rb, 0);
  int n = 0;
  uint64_t last = 0;
  while (auto e = reader.next()) {
    CHECK(e->ts >= b);
    CHECK(e->ts <= a);
    CHECK(e->ts >= last);
    last = e->ts;
    ++n;
  }
  CHECK(n == 3);
}

namespace {
// The conversion written the plain way (mult zero-extended to 128 bits, a
// variable shift), as the trace clock once computed it: an independent reference.
uint64_t old_tsc_to_ns(uint64_t base_tsc, uint64_t base_ns, uint64_t mult, uint32_t shift,
                       uint64_t tsc) {
  const auto delta = static_cast<__int128>(static_cast<int64_t>(tsc - base_tsc));
  const auto scaled = static_cast<int64_t>((delta * static_cast<__int128>(mult)) >> shift);
  return base_ns + static_cast<uint64_t>(scaled);
}
// core/clock/trace_clock.cc: calibrate()
uint64_t mult_for(uint64_t hz) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(1000000000u) << TscScale::kShift) /
                               hz);
}
}  // namespace

TEST_CASE("tsc_clock: the calibration's mult is below 2^63 for any counter of >= 1 Hz",
          "[buffers][clock]") {
  CHECK(mult_for(1) == uint64_t{1000000000} << 32);
  CHECK(mult_for(1) < (uint64_t{1} << 63));
  for (uint64_t hz : {uint64_t{2}, uint64_t{1000}, uint64_t{24000000}, uint64_t{1000000000},
                      uint64_t{2994383000}, uint64_t{10000000000}})
    CHECK(mult_for(hz) < mult_for(1));
}

TEST_CASE("tsc_clock: scale_tsc equals the previous conversion at the ends of the signed range",
          "[buffers][clock]") {
  std::mt19937_64 rng(0x0ec8610);
  const uint64_t hzs[] = {1, 3, 1000, 24000000, 1000000000, 2994383000, 3000000000, 10000000000};
  for (uint64_t hz : hzs) {
    const uint64_t mult = mult_for(hz);
    for (int b = 0; b < 8; ++b) {
      const uint64_t base_tsc = b == 0   ? 0
                                : b == 1 ? ~uint64_t{0}
                                : b == 2 ? uint64_t{1} << 63
                                         : rng();
      const uint64_t base_ns = b < 3 ? uint64_t{123456789} : rng();
      const TscScale s{base_tsc, base_ns, mult};
      const uint64_t deltas[] = {0,
                                 1,
                                 ~uint64_t{0} /* -1 */,
                                 uint64_t{1} << 31,
                                 uint64_t{1} << 32,
                                 (uint64_t{1} << 32) - 1,
                                 uint64_t{1} << 62,
                                 (uint64_t{1} << 63) - 1,
                                 uint64_t{1} << 63 /* INT64_MIN */,
                                 (uint64_t{1} << 63) + 1,
                                 hz,
                                 0 - hz,
                                 hz * 3600,
                                 0 - hz * 3600};
      for (uint64_t d : deltas) {
        const uint64_t t = base_tsc + d;
        INFO("hz " << hz << " base_tsc " << base_tsc << " delta " << d);
        CHECK(scale_tsc(s, t) == old_tsc_to_ns(base_tsc, base_ns, mult, 32, t));
      }
      for (int k = 0; k < 1000; ++k) {
        const uint64_t t = rng();
        CHECK(scale_tsc(s, t) == old_tsc_to_ns(base_tsc, base_ns, mult, 32, t));
      }
    }
  }
  // Hand-computed at a realistic rate: 3 GHz, one second and one hour either side.
  const TscScale g3{1'000'000'000'000, 7'000'000'000, mult_for(3'000'000'000)};
  CHECK(mult_for(3'000'000'000) == 1431655765);
  CHECK(scale_tsc(g3, 1'000'000'000'000 + 3'000'000'000) ==
        7'000'000'000 + 999'999'999);  // 0.99999999977 s
  CHECK(scale_tsc(g3, 1'000'000'000'000 - 3'000'000'000) == 7'000'000'000 - 1'000'000'000);
  CHECK(scale_tsc(g3, 1'000'000'000'000 + 10'800'000'000'000) == 7'000'000'000 + 3'599'999'999'161);
}
