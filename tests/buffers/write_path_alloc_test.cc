// The write path allocates nothing: operator new and malloc (and friends) are
// counted in this executable (tests/support/alloc_counter.h) while reserve/commit/discard/write,
// sub-buffer switches, overwrite recycling, drop-newest losses, pause, and
// temp-buffer claims run. (Readers may allocate; they are not counted.)
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <new>

#include "alloc_counter.h"
#include "test_support.h"
#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/buffers/temp_buffer.h"

namespace {
uint64_t allocs() noexcept { return tp_test::alloc_counter::count(); }
}  // namespace

using namespace tracepipe::buffers;

namespace {

// Runs every write-path operation many times; returns the write attempts.
template <class RB>
uint64_t exercise(RB& rb, TempBuffer& tb, PerThreadTempBuffer& ptb) {
  uint64_t attempts = 0;
  std::byte src[300];
  std::memset(src, 1, sizeof src);
  for (int i = 0; i < 5000; ++i) {
    const uint32_t cpu = i % 2;
    const uint32_t len = 8 + (i * 37) % 200;
    Reservation r = rb.reserve(cpu, len);
    ++attempts;
    if (r) std::memset(r.payload().data(), i, len);
    if (i % 7 == 0) {
      rb.discard(r);  // reclaim
    } else if (i % 11 == 0) {
      Reservation b = rb.reserve(cpu, 16);
      ++attempts;
      rb.discard(r);  // padding
      rb.commit(b);
    } else {
      rb.commit(r);
    }
    attempts += 1;
    (void)rb.write(cpu, std::span<const std::byte>(src, len));
    if (i % 500 == 0) {
      rb.pause();
      (void)rb.reserve(cpu, 8);
      ++attempts;
      rb.resume();
      (void)rb.reserve(cpu, rb.max_payload() + 1);  // too big
      ++attempts;
    }
    StagedRecord s = tb.try_claim(cpu, len);
    StagedRecord nested = tb.try_claim(cpu, len);  // busy fallback
    TempBuffer::release(nested);
    TempBuffer::release(s);
    StagedRecord p = ptb.try_claim(cpu, len);
    PerThreadTempBuffer::release(p);
  }
  return attempts;
}

}  // namespace

TEST_CASE("write path: no allocation in any mode", "[buffers][alloc]") {
#if defined(TRACEPIPE_SANITIZED)
  TP_SKIP("malloc is not replaceable under sanitizers");
#else
  REQUIRE(tp_test::alloc_counter::probe() == 2);  // the counter works (the test can fail)

  const RingBufferConfig cfg{.cpus = 2, .size_per_cpu = 8192, .subbuf_size = 512};
  OverwriteRingBuffer over(cfg);
  DropNewestRingBuffer drop(cfg);
  TempBuffer tb(TempBufferConfig{.cpus = 2, .slot_size = 512});
  PerThreadTempBuffer ptb(512);

  const uint64_t before = allocs();
  const uint64_t a1 = exercise(over, tb, ptb);
  const uint64_t a2 = exercise(drop, tb, ptb);
  CHECK(allocs() - before == 0);

  // The exercise did reach the slow paths.
  const CpuStats o = over.stats(0), d = drop.stats(0);
  CHECK(o.overrun > 0);
  CHECK(o.reclaimed > 0);
  CHECK(d.lost_full > 0);
  CHECK(d.lost_paused > 0);
  CHECK(d.lost_too_big > 0);
  CHECK(o.accounted() + over.stats(1).accounted() == a1);
  CHECK(d.accounted() + drop.stats(1).accounted() == a2);
#endif
}
