// The inline TSC clock: scale_tsc's arithmetic (signed differences, the
// fixed shift) and FunctionClock reading it without calling its function.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>

#include "buffers/readers.h"
#include "buffers/ring_buffer.h"
#include "buffers/tsc_clock.h"
#include "test_support.h"

using namespace tracepipe::buffers;

namespace {
std::atomic<uint64_t> g_calls{0};
uint64_t counting_clock() noexcept { return 1000 + g_calls.fetch_add(1, std::memory_order_relaxed); }
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

TEST_CASE("tsc_clock: FunctionClock with a scale reads the TSC inline, without its function", "[buffers][clock]") {
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
