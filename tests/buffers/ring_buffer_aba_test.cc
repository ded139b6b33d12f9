// The ABA on a position word (ring_buffer.h, "ABA protection"): a writer
// whose view of the tail is stale (it loaded the tail, then was preempted, or
// a signal handler ran) must not be able to claim a sub-buffer that was
// recycled since it looked. Forced deterministically with a Hooks policy: at
// Step::switching (the outer writer has its stale view, it has not looked at
// the position word yet) a nested writer runs one or two whole laps. Then
// (bounded) stress: more writer threads than CPUs on a ring of 4 sub-buffers,
// writers yielding at the switch to widen the window; every thread must
// finish its iterations (a watchdog pauses the buffer, which unsticks a
// livelocked writer, and fails the test instead of hanging) and the counts
// must be conserved. Label "concurrency".
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "buffer_test_util.h"

using namespace tp_buffers_test;

namespace {

// Runs `nested` once at the first Step::switching; counts switching steps of
// the outer reserve and pauses the buffer past a bound (a livelocked writer
// retries the switch forever; pause makes that retry fail), so the test
// fails instead of hanging.
struct AbaHooks {
  std::function<void()>* nested = nullptr;
  std::function<void()>* on_livelock = nullptr;
  int* switching = nullptr;
  bool* in_nested = nullptr;
  void operator()(Step s, uint32_t) const noexcept {
    if (s != Step::switching || *in_nested) return;
    if (++*switching > 64) {
      (*on_livelock)();
      return;
    }
    if (*nested) {
      std::function<void()> run = std::move(*nested);
      *nested = nullptr;
      *in_nested = true;
      run();
      *in_nested = false;
    }
  }
};
template <OverflowMode M>
using AbaRB = RingBuffer<M, FunctionClock, AbaHooks>;

// 4 data sub-buffers + 1 spare of 256 bytes; every record below fills one.
constexpr RingBufferConfig kRing{.cpus = 1, .size_per_cpu = 1024, .subbuf_size = 256};

template <OverflowMode M>
void run_stale_claim(int laps) {
  std::function<void()> nested;
  std::function<void()> on_livelock;
  int switching = 0;
  bool in_nested = false, livelock = false;
  AbaRB<M> rb(kRing, &fake_clock, AbaHooks{&nested, &on_livelock, &switching, &in_nested});
  on_livelock = [&] {
    livelock = true;
    rb.pause();
  };
  const uint32_t full = rb.max_payload();  // stride == S: one record per sub-buffer
  const int P = static_cast<int>(rb.nr_subbufs());
  REQUIRE(P == 5);
  ConsumingReader reader(rb, 0);
  uint64_t attempts = 0, read = 0;
  std::vector<int> seen;
  auto read_all = [&] {
    for (const Got& g : drain(reader)) {
      seen.push_back(g.tag);
      ++read;
    }
  };
  ++attempts;
  REQUIRE(put(rb, 0, full, 1));  // position 0 full: the outer record needs the switch
  nested = [&] {
    // The outer writer holds tail (lap 0, idx 0) and wants position 1 for
    // lap 0. Run `laps` whole laps; the last switch leaves position 1 FREE
    // (overwrite recycles it ahead at S4; drop-newest: the reader freed it).
    for (int i = 0; i < laps * P; ++i) {
      ++attempts;
      CHECK(put(rb, 0, full, static_cast<uint8_t>(10 + i)));
      if constexpr (M == OverflowMode::drop_newest) read_all();
    }
  };
  ++attempts;
  const bool outer = put(rb, 0, full, 2);
  CHECK_FALSE(livelock);
  CHECK(outer);
  // The ring must keep working for two more laps: no lost record, no stuck
  // position (a stale claim leaves a LIVE word of an old lap behind).
  switching = -1000000;  // only the outer reserve above is watched
  for (int i = 0; i < 2 * P; ++i) {
    ++attempts;
    CHECK(put(rb, 0, full, static_cast<uint8_t>(100 + i)));
    if constexpr (M == OverflowMode::drop_newest) read_all();
  }
  read_all();
  const CpuStats s = rb.stats(0);
  INFO("laps " << laps << " read " << s.read << " overrun " << s.overrun << " lost " << s.lost()
               << " (busy " << s.lost_busy << " commit_overrun " << s.commit_overrun << " full "
               << s.lost_full << ")");
  CHECK(s.lost() == 0);
  CHECK(s.conserved(attempts));
  REQUIRE(seen.size() >= 2);
  // The newest records, in order, end with the last two written.
  CHECK(seen[seen.size() - 2] == 100 + 2 * P - 2);
  CHECK(seen.back() == 100 + 2 * P - 1);
  if constexpr (M == OverflowMode::drop_newest)
    CHECK(read == attempts);  // a reader kept up: nothing lost
}

}  // namespace

TEST_CASE("aba: a writer with a stale tail cannot claim a recycled sub-buffer (overwrite)",
          "[buffers][interleave][aba]") {
  for (int laps : {1, 2, 3}) run_stale_claim<OverflowMode::overwrite>(laps);
}

TEST_CASE("aba: a writer with a stale tail cannot claim a freed sub-buffer (drop-newest)",
          "[buffers][interleave][aba]") {
  for (int laps : {1, 2, 3}) run_stale_claim<OverflowMode::drop_newest>(laps);
}

// ── Bounded stress: progress and conservation ─────────────────────────────

namespace {

#if defined(TRACEPIPE_SANITIZED)
constexpr int kProgressIterations = 4000;
#else
constexpr int kProgressIterations = 40000;
#endif

// Yields at the sub-buffer switch now and then, after the tail was loaded and
// before the position word is: the window of the ABA, widened.
struct YieldHooks {
  void operator()(Step s, uint32_t) const noexcept {
    thread_local uint32_t n = 0;
    if (s == Step::switching && (++n & 3) == 0) sched_yield();
  }
};

template <OverflowMode M>
void run_progress() {
  using RB = RingBuffer<M, FunctionClock, YieldHooks>;
  RB rb(RingBufferConfig{.cpus = 1, .size_per_cpu = 3 * 1024, .subbuf_size = 1024});
  REQUIRE(rb.nr_subbufs() == 4);
  const unsigned hw = std::thread::hardware_concurrency();
  const int writers = static_cast<int>(std::max(4u, std::min(8u, 2 * (hw == 0 ? 1 : hw))));
  std::vector<std::atomic<int>> done_iters(writers);
  std::atomic<int> finished{0};
  std::atomic<bool> stalled{false}, stop_reader{false};
  std::atomic<uint64_t> attempts{0}, reader_got{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < writers; ++t)
    ts.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t) * 7919u + 1);
      for (int i = 0; i < kProgressIterations && !stalled.load(std::memory_order_relaxed); ++i) {
        const uint32_t len = 8 + rng() % (rb.max_payload() - 8);
        attempts.fetch_add(1, std::memory_order_relaxed);
        Reservation r = rb.reserve(0, len);
        if (r) {
          std::memset(r.payload().data(), t + 1, len);
          if (i % 17 == 0)
            rb.discard(r);
          else
            rb.commit(r);
        } else {
          // Refused (drop-newest full, or busy): wait, boundedly, until the
          // reader has taken a record, as a real writer that lost records
          // would not spin on. One yield was not enough: a TSan build on 2
          // shared CPUs starved the reader (26, then 50 switches in 16000
          // attempts, ~15900 lost as full) and the switch check failed.
          const uint64_t seen = reader_got.load(std::memory_order_relaxed);
          for (int k = 0; k < 200 && reader_got.load(std::memory_order_relaxed) == seen &&
                          !stalled.load(std::memory_order_relaxed);
               ++k)
            std::this_thread::yield();
        }
        done_iters[t].store(i + 1, std::memory_order_relaxed);
      }
      finished.fetch_add(1, std::memory_order_release);
    });
  // A consuming reader (drop-newest needs one to make room; overwrite races it).
  std::thread reader([&] {
    ConsumingReader cr(rb, 0);
    while (!stop_reader.load(std::memory_order_acquire)) {
      if (cr.next())
        reader_got.fetch_add(1, std::memory_order_relaxed);
      else
        std::this_thread::yield();
    }
  });
  // Watchdog: no writer progress for 10 s (generous for TSan on 2 shared
  // cores) is a livelock. Pausing makes a writer retrying the switch give up.
  auto sum = [&] {
    uint64_t s = 0;
    for (auto& d : done_iters) s += static_cast<uint64_t>(d.load(std::memory_order_relaxed));
    return s;
  };
  uint64_t last = sum();
  auto last_change = std::chrono::steady_clock::now();
  while (finished.load(std::memory_order_acquire) < writers) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const uint64_t now = sum();
    if (now != last) {
      last = now;
      last_change = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - last_change > std::chrono::seconds(10)) {
      stalled = true;
      rb.pause();
      break;
    }
  }
  for (auto& t : ts) t.join();
  stop_reader = true;
  reader.join();
  if (rb.paused()) rb.resume();
  {
    ConsumingReader cr(rb, 0);  // drain what is left
    while (cr.next()) reader_got.fetch_add(1, std::memory_order_relaxed);
  }
  CHECK_FALSE(stalled.load());
  for (int t = 0; t < writers; ++t) {
    INFO("writer " << t);
    CHECK(done_iters[t].load() == kProgressIterations);
  }
  const CpuStats s = rb.stats(0);
  INFO("writers " << writers << " attempts " << attempts.load() << " read " << s.read << " overrun "
                  << s.overrun << " lost " << s.lost() << " (busy " << s.lost_busy
                  << " commit_overrun " << s.commit_overrun << " full " << s.lost_full
                  << ") discarded " << s.discarded << " entries " << s.entries << " switches "
                  << s.subbuf_switches);
  CHECK(s.entries == 0);
  CHECK(s.read == reader_got.load());
  CHECK(s.conserved(attempts.load()));
  CHECK(s.subbuf_switches > 100);
}

}  // namespace

TEST_CASE("aba stress: more writers than CPUs on 4 sub-buffers all progress (overwrite)",
          "[buffers][stress][aba]") {
  run_progress<OverflowMode::overwrite>();
}

TEST_CASE("aba stress: more writers than CPUs on 4 sub-buffers all progress (drop-newest)",
          "[buffers][stress][aba]") {
  run_progress<OverflowMode::drop_newest>();
}

// ── The recycler's pin (ring_buffer.h, states; I3) ─────────────────────────
// recycle_overwrite pins the position before it walks it and moves it to
// PREPARING only by a CAS from "pinned once, by us"; every other outcome
// must give the pin back, or the position could never be recycled again.
// Called directly on closed sub-buffers of a quiet buffer: each outcome and
// the position word it leaves.

namespace {

uint64_t word_of(RingBufferBase& rb, uint64_t idx) {
  return rb.cpu_buffer(0).positions[idx].load(std::memory_order_acquire);
}

}  // namespace

TEST_CASE("recycle: pins while it walks, and leaves no pin on any outcome", "[buffers][recycle]") {
  using namespace tracepipe::buffers::detail;
  OverwriteRingBuffer rb(kRing, &fake_clock);
  detail::CpuBuffer& cb = rb.cpu_buffer(0);
  const uint32_t full = rb.max_payload();  // one record fills a sub-buffer
  // Position 0: two committed records and one reserved, not committed.
  REQUIRE(put(rb, 0, 32, 1));
  REQUIRE(put(rb, 0, 32, 2));
  Reservation pending = rb.reserve(0, 32);
  REQUIRE(pending);
  REQUIRE(put(rb, 0, full, 3));  // does not fit: the tail moves to position 1
  REQUIRE(tail_idx(load_relaxed(cb.tail.pos)) == 1);
  REQUIRE(word_of(rb, 0) == make_pw(Phase::live, 0, 0, 0));

  SECTION("a pending record: set aside (a spare swapped in), no pin left") {
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::recycled);
    CHECK(word_of(rb, 0) == make_pw(Phase::free, 0, 0, 0));
    CHECK(cb.slots[0].load() != 0);  // position 0 uses a spare's memory now
    CpuStats s = rb.stats(0);
    CHECK(s.overrun == 2);  // the two committed before it
    CHECK(s.set_aside == 1);
    CHECK(s.lost_set_aside == 0);  // not committed yet: in flight
    rb.commit(pending);
    s = rb.stats(0);
    CHECK(s.lost_set_aside == 1);  // committed into the set-aside memory: lost, counted once
    CHECK(s.commit_overrun == 0);
    CHECK(rb.stats(0).lost_set_aside == 1);
  }
  SECTION("a pending record and no spare free: no recycling, no pin left") {
    // Every spare word taken by hand (as if each held a stalled record).
    for (uint32_t i = 0; i < cb.nr_spares; ++i)
      cb.spares[i].store(make_sw(SpareState::taken, sw_slot(cb.spares[i].load()), 0));
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::pending);
    CHECK(word_of(rb, 0) == make_pw(Phase::live, 0, 0, 0));
    CHECK(rb.stats(0).overrun == 0);
    for (uint32_t i = 0; i < cb.nr_spares; ++i)
      cb.spares[i].store(make_sw(SpareState::empty, sw_slot(cb.spares[i].load()), 0));
    rb.commit(pending);
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::recycled);
    CHECK(word_of(rb, 0) == make_pw(Phase::free, 0, 0, 0));
    CHECK(cb.slots[0].load() == 0);  // recycled in place
    CHECK(rb.stats(0).overrun == 3);
  }
  SECTION("pinned by a reader: no recycling, the reader's pin only; recycled once it unpins") {
    rb.commit(pending);
    const std::optional<uint64_t> p = pin(cb, 0, 0);
    REQUIRE(p);
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::pinned);
    CHECK(word_of(rb, 0) == make_pw(Phase::live, 0, 1, 0));
    unpin(cb, 0);
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::recycled);
    CHECK(word_of(rb, 0) == make_pw(Phase::free, 0, 0, 0));
    CHECK(rb.stats(0).overrun == 3);
  }
  SECTION("partly consumed: only the records after read_off are overrun") {
    rb.commit(pending);
    ConsumingReader reader(rb, 0);
    auto first = reader.next();  // takes every committed record of position 0
    REQUIRE(first);
    const uint64_t w = word_of(rb, 0);
    CHECK(pw_pins(w) == 0);
    CHECK(pw_read_off(w) == rb.subbuf_size());
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::recycled);
    CHECK(word_of(rb, 0) == make_pw(Phase::free, 0, 0, 0));
    CHECK(rb.stats(0).overrun == 0);
  }
  SECTION("another lap: stale, word untouched") {
    rb.commit(pending);
    CHECK(recycle_overwrite(cb, 0, 1) == Recycle::stale);
    CHECK(word_of(rb, 0) == make_pw(Phase::live, 0, 0, 0));
  }
  // Whatever happened above, the ring keeps working for two laps.
  for (int i = 0; i < 2 * static_cast<int>(rb.nr_subbufs()); ++i)
    CHECK(put(rb, 0, full, static_cast<uint8_t>(50 + i)));
  for (uint64_t idx = 0; idx < rb.nr_subbufs(); ++idx) {
    INFO("position " << idx);
    CHECK(pw_pins(word_of(rb, idx)) == 0);
    CHECK(pw_holders(word_of(rb, idx)) == 0);
  }
}

// Stress for the same: small records of varied sizes make every walk long
// (about 70 headers) and move header offsets between laps; a consuming reader
// that lags (it yields now and then) frees each sub-buffer it finishes
// (free_consumed) while writers recycle the oldest one ahead (S4) or at the
// switch (S1). Before the recycler pinned, its walk could still be loading
// header words when the reader (or the other recycler) had zeroed the
// sub-buffer and a writer was filling it again: ThreadSanitizer reported that
// race (an atomic header load against a writer's plain stores) in every run
// of this case with the old recycle_overwrite. Every record read must be
// whole, and the counts conserved.
TEST_CASE("recycle stress: walks of long sub-buffers against a consuming reader (overwrite)",
          "[buffers][stress][recycle]") {
#if defined(TRACEPIPE_SANITIZED)
  constexpr int kIters = 100000;
#else
  constexpr int kIters = 400000;
#endif
  OverwriteRingBuffer rb(
      RingBufferConfig{.cpus = 1, .size_per_cpu = 16 * 4096, .subbuf_size = 4096});
  REQUIRE(rb.nr_subbufs() == 17);
  constexpr int kWriters = 3;
  std::atomic<int> finished{0};
  std::atomic<uint64_t> attempts{0}, reader_got{0}, torn{0};
  auto check = [&](const RecordView& v) {
    const Got g = got_of(v);
    if (!g.uniform || g.len < 8 || g.len > 64) torn.fetch_add(1, std::memory_order_relaxed);
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < kWriters; ++t)
    ts.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t) + 11);
      uint64_t n = 0;
      for (int i = 0; i < kIters; ++i) {
        const uint32_t len = 8 + rng() % 57;  // varied strides: old and new header offsets differ
        ++n;
        Reservation r = rb.reserve(0, len);
        if (!r) continue;
        std::memset(r.payload().data(), static_cast<int>(1 + (i & 0x7f)), len);
        rb.commit(r);
      }
      attempts.fetch_add(n, std::memory_order_relaxed);
      finished.fetch_add(1, std::memory_order_release);
    });
  std::thread reader([&] {
    ConsumingReader cr(rb, 0);
    // Start behind: no read until the writers have recycled an unread
    // sub-buffer. A reader that kept up (a loaded machine can run it as
    // much as the writers) would leave overrun at 0; 1.2M records do not
    // fit 64 KiB unread, so the first overrun comes before they finish.
    while (rb.stats(0).overrun == 0 && finished.load(std::memory_order_acquire) < kWriters)
      std::this_thread::yield();
    for (uint64_t k = 1; finished.load(std::memory_order_acquire) < kWriters; ++k) {
      if (auto v = cr.next()) {
        check(*v);
        reader_got.fetch_add(1, std::memory_order_relaxed);
      }
      if (k % 64 == 0) std::this_thread::yield();  // lag: writers lap the reader
    }
    while (auto v = cr.next()) {
      check(*v);
      reader_got.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (auto& t : ts) t.join();
  reader.join();
  const CpuStats s = rb.stats(0);
  INFO("attempts " << attempts.load() << " read " << s.read << " overrun " << s.overrun << " lost "
                   << s.lost() << " (busy " << s.lost_busy << " commit_overrun " << s.commit_overrun
                   << ") entries " << s.entries << " switches " << s.subbuf_switches);
  CHECK(torn.load() == 0);
  CHECK(s.entries == 0);
  CHECK(s.read == reader_got.load());
  CHECK(s.overrun >
        0);  // the writers did recycle unread sub-buffers (the reader's start makes this hold)
  CHECK(s.conserved(attempts.load()));
  for (uint64_t idx = 0; idx < rb.nr_subbufs(); ++idx) {
    INFO("position " << idx);
    CHECK(detail::pw_pins(rb.cpu_buffer(0).positions[idx].load()) == 0);
  }
}
