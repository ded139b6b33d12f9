// Overwrite mode with a writer stalled between reserve and commit
// (ring_buffer.h, "Set aside"): when the tail wraps around to the stalled
// record's sub-buffer, a spare is swapped in for its memory and the old
// memory set aside until its writers are done. Forced deterministically
// with Hooks: the stall is a hook that writes many laps from inside the
// reserve; each race the swap creates is forced at its step. Checked every
// time: no torn record, stamps non-decreasing in what the reader yields, every
// neighbour's record kept (lost_set_aside counts only the stalled record;
// commit_overrun, the drop at a switch, stays 0),
// conservation exact. Then a bounded stress of many writers per CPU buffer
// that yield between reserve and commit. Label "concurrency".
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <span>
#include <thread>
#include <vector>

#include "buffer_test_util.h"
#include "tracepipe/buffers/subbuf_reader.h"
#include "tracepipe/buffers/testing/hooks.h"

using namespace tp_buffers_test;
using namespace tracepipe::buffers::detail;

namespace {

// Runs `*nested` once, at the first `at` step of the outer call (not inside
// the nested writes themselves).
struct StallHooks {
  Step at = Step::reserved;
  std::function<void()>* nested = nullptr;
  bool* in_nested = nullptr;
  void operator()(Step s, uint32_t) const noexcept {
    if (s != at || *in_nested || !*nested) return;
    std::function<void()> run = std::move(*nested);
    *nested = nullptr;
    *in_nested = true;
    run();
    *in_nested = false;
  }
};
using StallRB = RingBuffer<OverflowMode::overwrite, FunctionClock, StallHooks>;

// 4 data sub-buffers + 1 of 256 bytes, 8 spares; 48-byte records: 4 per sub-buffer.
constexpr RingBufferConfig kSetAsideRing{.cpus = 1, .size_per_cpu = 1024, .subbuf_size = 256};
constexpr uint32_t kLen = 48;

// Writes `n` records with tags 1, 2, ... (mod 250) and a rising clock.
int write_n(StallRB& rb, int n, int& tag) {
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    g_fake_now.fetch_add(1);
    ok += put(rb, 0, kLen, static_cast<uint8_t>(1 + tag++ % 250)) ? 1 : 0;
  }
  return ok;
}

// What a consuming reader yields: whole records, stamps never going back.
std::vector<Got> read_checked(StallRB& rb) {
  ConsumingReader reader(rb, 0);
  std::vector<Got> got = drain(reader);
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("record " << i);
    CHECK(got[i].uniform);
    CHECK(got[i].len == kLen);
    if (i > 0) CHECK(got[i].ts >= got[i - 1].ts);
  }
  return got;
}

uint32_t empty_spares(const CpuBuffer& cb) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < cb.nr_spares; ++i)
    n += sw_state(cb.spares[i].load()) == SpareState::empty ? 1 : 0;
  return n;
}

// Clears a test hook when the test case ends, however it ends.
template <auto& Hook>
struct HookReset {
  ~HookReset() { Hook.store(nullptr); }
};

// What the capture-less hooks of the takeover tests reach: the test's ring,
// the records written so far, whether the stall already happened.
struct Stalled {
  OverwriteRingBuffer* rb = nullptr;
  uint64_t written = 0;
  bool in = false;
};
Stalled g_stalled;

}  // namespace

TEST_CASE("set aside: a writer stalled at Step::reserved costs only its own record",
          "[buffers][overwrite][set_aside]") {
  std::function<void()> nested;
  bool in_nested = false;
  StallRB rb(kSetAsideRing, &fake_clock, StallHooks{Step::reserved, &nested, &in_nested});
  CpuBuffer& cb = rb.cpu_buffer(0);
  int tag = 0;
  REQUIRE(write_n(rb, 2, tag) == 2);   // the stalled record is the third of its sub-buffer
  constexpr int kNested = 20 * 5 * 4;  // 20 laps of the ring while the writer is stalled
  int nested_ok = 0;
  nested = [&] { nested_ok = write_n(rb, kNested, tag); };
  g_fake_now.fetch_add(1);
  Reservation stalled = rb.reserve(0, kLen);  // the hook runs the 20 laps before it returns
  REQUIRE(stalled);
  CHECK(nested_ok == kNested);  // every neighbour's record was taken
  // The stalled record's memory is no longer in the ring: writing it now
  // cannot tear anything a reader sees.
  std::memset(stalled.payload().data(), 0xEE, kLen);
  rb.commit(stalled);
  const CpuStats s = rb.stats(0);
  CHECK(s.set_aside == 1);
  CHECK(s.lost_busy == 0);
  CHECK(s.lost_set_aside == 1);  // the stalled record, and nothing else
  CHECK(s.commit_overrun == 0);  // no writer was refused at a switch
  CHECK(s.lost() == 1);
  const std::vector<Got> got = read_checked(rb);
  // The newest records are all there, in order: the last 4 sub-buffers minus
  // the tail's free room (the last record is the newest one written).
  REQUIRE(!got.empty());
  CHECK(got.back().tag == 1 + (tag - 1) % 250);
  for (const Got& g : got) CHECK(g.tag != 0xEE);
  const CpuStats after = rb.stats(0);
  CHECK(after.conserved(2 + 1 + kNested));
  CHECK(empty_spares(cb) == cb.nr_spares);  // returned to the spares once committed
}

TEST_CASE("set aside: the stalled writer discards instead: counted discarded, nothing lost",
          "[buffers][overwrite][set_aside]") {
  std::function<void()> nested;
  bool in_nested = false;
  StallRB rb(kSetAsideRing, &fake_clock, StallHooks{Step::reserved, &nested, &in_nested});
  int tag = 0;
  REQUIRE(write_n(rb, 1, tag) == 1);
  nested = [&] { CHECK(write_n(rb, 60, tag) == 60); };
  Reservation stalled = rb.reserve(0, kLen);
  REQUIRE(stalled);
  rb.discard(stalled);  // padding in the set-aside memory
  const CpuStats s = rb.stats(0);
  CHECK(s.set_aside == 1);
  CHECK(s.lost() == 0);
  CHECK(s.discarded == 1);
  (void)read_checked(rb);
  CHECK(rb.stats(0).conserved(62));
}

// The interleaving TSan found in the model concurrency test: a writer that
// loaded the tail at its record's end starts a reclaiming discard, and
// before its CAS the tail goes round the ring and the swap's walk (X3) meets
// its record (word 0) and loads its stride, while the discard zeroes it.
// Forced at both sides of the zeroing: before it, the walk steps over the
// record and retires its committed neighbours (overrun); after it (stride 0),
// the walk stops there and those neighbours are counted by the reclaim
// (lost_set_aside). Either way the discard finds the tail moved, leaves
// padding, and every record is counted once.
TEST_CASE("set aside: the swap's walk meets a record its writer is discarding",
          "[buffers][overwrite][set_aside]") {
  const Step at = GENERATE(Step::discarding, Step::reclaiming);
  INFO("laps run at step " << static_cast<int>(at));
  std::function<void()> nested;
  bool in_nested = false;
  StallRB rb(kSetAsideRing, &fake_clock, StallHooks{at, &nested, &in_nested});
  int tag = 0;
  REQUIRE(write_n(rb, 1, tag) == 1);
  g_fake_now.fetch_add(1);
  Reservation r = rb.reserve(0, kLen);  // the second of 4 in position 0, the last one reserved
  REQUIRE(r);
  // 2 more records fill position 0 behind it, then 3 laps: position 0 is set aside.
  nested = [&] { CHECK(write_n(rb, 60, tag) == 60); };
  rb.discard(r);
  CHECK(nested == nullptr);  // the laps ran inside the discard
  const CpuStats s = rb.stats(0);
  CHECK(s.set_aside == 1);
  CHECK(s.discarded == 1);
  CHECK(s.reclaimed == 0);  // the tail had moved on: padding
  CHECK(s.commit_overrun == 0);
  CHECK(s.lost_busy == 0);
  CHECK(s.lost_set_aside == (at == Step::discarding ? 0u : 2u));
  (void)read_checked(rb);
  CHECK(rb.stats(0).conserved(1 + 1 + 60));
  CHECK(empty_spares(rb.cpu_buffer(0)) == rb.cpu_buffer(0).nr_spares);
}

TEST_CASE(
    "set aside: a writer stalled between (C) and (D) (no stride yet) loses only records of its "
    "sub-buffer",
    "[buffers][overwrite][set_aside]") {
  std::function<void()> nested;
  bool in_nested = false;
  StallRB rb(kSetAsideRing, &fake_clock, StallHooks{Step::reserving, &nested, &in_nested});
  int tag = 0;
  REQUIRE(write_n(rb, 1, tag) == 1);
  nested = [&] { CHECK(write_n(rb, 80, tag) == 80); };
  Reservation stalled = rb.reserve(0, kLen);  // its header is all zero while the hook runs
  REQUIRE(stalled);
  std::memset(stalled.payload().data(), 0xEE, kLen);
  rb.commit(stalled);
  const CpuStats s = rb.stats(0);
  CHECK(s.set_aside == 1);
  CHECK(s.lost_busy == 0);
  // The swap cannot step over a record whose stride is not stored yet, so the
  // two neighbours committed after it in the same sub-buffer are counted when
  // the set-aside memory is reclaimed, with the stalled one: lost_set_aside 3.
  // Every record is still counted exactly once.
  CHECK(s.lost_set_aside == 3);
  CHECK(s.commit_overrun == 0);
  const std::vector<Got> got = read_checked(rb);
  for (const Got& g : got) CHECK(g.tag != 0xEE);
  CHECK(rb.stats(0).conserved(82));
}

TEST_CASE(
    "set aside: a switcher stalled between (S2) and (S3) writes its END into the set-aside memory",
    "[buffers][overwrite][set_aside]") {
  std::function<void()> nested;
  bool in_nested = false;
  StallRB rb(kSetAsideRing, &fake_clock, StallHooks{Step::switched, &nested, &in_nested});
  int tag = 0;
  // 3 records of 64 bytes in position 0 (192 of 256 bytes): the 4th does not
  // fit, so its writer switches and must close position 0 with an END at 192.
  REQUIRE(write_n(rb, 3, tag) == 3);
  const uint32_t big = 100;  // stride 120: does not fit the 64 bytes left
  nested = [&] {
    CHECK(write_n(rb, 60, tag) == 60);
  };  // 3 laps: position 0 (no END yet) is set aside
  g_fake_now.fetch_add(1);
  REQUIRE(rb.write(0, bytes_of(big, 0xAB)));
  const CpuStats s = rb.stats(0);
  // Position 0 (END missing) and position 1 (our record, pending while the
  // hook ran) were both set aside; our record is the only one lost.
  CHECK(s.set_aside == 2);
  CHECK(s.lost_set_aside == 1);
  CHECK(s.lost() == 1);
  // Had the END gone to the memory position 0 uses now, it would cut a
  // sub-buffer of a later lap short and its records would never be read.
  ConsumingReader reader(rb, 0);
  const std::vector<Got> got = drain(reader);
  for (const Got& g : got) CHECK(g.uniform);
  for (size_t i = 1; i < got.size(); ++i) CHECK(got[i].ts >= got[i - 1].ts);
  const CpuStats after = rb.stats(0);
  CHECK(after.read == got.size());
  CHECK(after.conserved(3 + 60 + 1));
  CHECK(empty_spares(rb.cpu_buffer(0)) == rb.cpu_buffer(0).nr_spares);
}

TEST_CASE("set aside: a fast-path writer whose view went stale before (C) resolves the new memory",
          "[buffers][overwrite][set_aside]") {
  std::function<void()> nested;
  bool in_nested = false;
  StallRB rb(kSetAsideRing, &fake_clock, StallHooks{Step::clocked, &nested, &in_nested});
  CpuBuffer& cb = rb.cpu_buffer(0);
  int tag = 0;
  // A record held pending in position 0, so that the laps below swap it.
  Reservation pending = rb.reserve(0, kLen);
  REQUIRE(pending);
  REQUIRE(write_n(rb, 1, tag) == 1);
  // Our writer resolves position 0's memory, then the hook runs 3 laps (the
  // swap gives position 0 a spare) before its CAS, which fails; it retries.
  nested = [&] { CHECK(write_n(rb, 60, tag) == 60); };
  g_fake_now.fetch_add(1);
  REQUIRE(put(rb, 0, kLen, 0xCD));
  CHECK(cb.set_aside.load() == 1);
  rb.commit(pending);
  const std::vector<Got> got = read_checked(rb);
  REQUIRE(!got.empty());
  CHECK(got.back().tag == 0xCD);  // ours, whole, where the reader finds it
  const CpuStats s = rb.stats(0);
  CHECK(s.lost_set_aside == 1);
  CHECK(s.commit_overrun == 0);
  CHECK(s.conserved(1 + 1 + 60 + 1));
}

TEST_CASE("set aside: races at the swap's CAS (X2), forced with the swap hook",
          "[buffers][overwrite][set_aside]") {
  OverwriteRingBuffer rb(kSetAsideRing, &fake_clock);
  CpuBuffer& cb = rb.cpu_buffer(0);
  const uint32_t full = rb.max_payload();
  REQUIRE(put(rb, 0, 32, 1));
  REQUIRE(put(rb, 0, 32, 2));
  Reservation pending = rb.reserve(0, 32);
  REQUIRE(pending);
  REQUIRE(put(rb, 0, 32, 3));    // a neighbour committed after it, same sub-buffer
  REQUIRE(put(rb, 0, full, 4));  // the tail moves to position 1
  static Reservation* g_pending = nullptr;
  static OverwriteRingBuffer* g_rb = nullptr;
  g_pending = &pending;
  g_rb = &rb;
  const HookReset<swap_test_hook> reset;

  SECTION(
      "a reader pins between the walk and the CAS: the swap gives the spare back, no pin of ours "
      "left") {
    swap_test_hook.store([](CpuBuffer& c, uint64_t idx) { REQUIRE(pin(c, idx, 0)); });
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::raced);
    swap_test_hook.store(nullptr);
    CHECK(cb.positions[0].load() == make_pw(Phase::live, 0, 1, 0));  // the reader's pin only
    CHECK(empty_spares(cb) == cb.nr_spares);
    CHECK(cb.slots[0].load() == 0);
    unpin(cb, 0);
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::recycled);
    rb.commit(pending);
    const CpuStats s = rb.stats(0);
    CHECK(s.overrun == 3);  // 1, 2 before it; 3 after it (made padding by the swap)
    CHECK(s.lost_set_aside == 1);
    CHECK(s.conserved(5));
  }
  SECTION(
      "the pending record commits between the walk and the CAS: set aside anyway, counted once") {
    swap_test_hook.store([](CpuBuffer&, uint64_t) { g_rb->commit(*g_pending); });
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::recycled);
    swap_test_hook.store(nullptr);
    const CpuStats s = rb.stats(0);
    // The swap's walk (X3) finds it committed and counts it overrun with its
    // neighbours; the reclaim then finds nothing left to count.
    CHECK(s.overrun == 4);
    CHECK(s.lost_set_aside == 0);
    CHECK(s.conserved(5));
  }
  SECTION("other recyclers take every other spare meanwhile: the one we took stays ours") {
    swap_test_hook.store([](CpuBuffer& c, uint64_t) {
      for (uint32_t i = 0; i < c.nr_spares; ++i) {
        uint64_t w = c.spares[i].load();
        if (sw_state(w) == SpareState::empty)
          c.spares[i].compare_exchange_strong(w, make_sw(SpareState::taken, sw_slot(w), 0));
      }
    });
    CHECK(recycle_overwrite(cb, 0, 0) == Recycle::recycled);
    swap_test_hook.store(nullptr);
    uint32_t aside = 0;
    for (uint32_t i = 0; i < cb.nr_spares; ++i)
      aside += sw_state(cb.spares[i].load()) == SpareState::aside ? 1 : 0;
    CHECK(aside == 1);
    for (uint32_t i = 0; i < cb.nr_spares; ++i) {
      const uint64_t w = cb.spares[i].load();
      if (sw_state(w) == SpareState::taken)
        cb.spares[i].store(make_sw(SpareState::empty, sw_slot(w), 0));
    }
    rb.commit(pending);
    CHECK(rb.stats(0).conserved(5));
  }
  // Whatever happened, the ring keeps working for many laps, and readers see whole records.
  for (int i = 0; i < 4 * static_cast<int>(rb.nr_subbufs()); ++i)
    CHECK(put(rb, 0, full, static_cast<uint8_t>(50 + i)));
  ConsumingReader reader(rb, 0);
  for (const Got& g : drain(reader)) CHECK(g.uniform);
  for (uint64_t idx = 0; idx < rb.nr_subbufs(); ++idx)
    CHECK(pw_pins(cb.positions[idx].load()) == 0);
  CHECK(empty_spares(cb) == cb.nr_spares);
}

// "Takeover" (ring_buffer.h): a recycler preempted in its walk of position 0
// (forced with the recycle hook, right after its hold (T1)) while the writers
// go round the ring three times. The writer that needs position 0 holds it
// too, walks it and swaps a spare in (T3): none of its neighbours drops a
// record. The stalled recycler's memory stays out of use, kept by
// walkers[slot], until it runs again and finds its hold absorbed (T4).
TEST_CASE("takeover: a recycler stalled in its walk is taken over and no neighbour is dropped",
          "[buffers][overwrite][set_aside][takeover]") {
  OverwriteRingBuffer rb(kSetAsideRing, &fake_clock);
  CpuBuffer& cb = rb.cpu_buffer(0);
  g_stalled = Stalled{&rb};
  for (int i = 0; i < 4; ++i, ++g_stalled.written)
    REQUIRE(put(rb, 0, kLen, static_cast<uint8_t>(1 + i)));  // position 0 full
  REQUIRE(put(rb, 0, rb.max_payload(), 5));                  // the tail moves to position 1
  ++g_stalled.written;
  const HookReset<recycle_test_hook> reset;
  recycle_test_hook.store([](CpuBuffer& c, uint64_t idx) {
    if (g_stalled.in || idx != 0) return;  // only the first recycler of position 0 stalls
    g_stalled.in = true;
    CHECK(pw_holders(c.positions[0].load()) == 1);
    for (int i = 0; i < 15; ++i, ++g_stalled.written)  // 3 laps of 5 sub-buffers, one record each
      CHECK(put(*g_stalled.rb, 0, g_stalled.rb->max_payload(), static_cast<uint8_t>(10 + i)));
    // Position 0 has other memory now; ours is set aside, kept for us.
    CHECK(c.slots[0].load() != 0);
    CHECK(c.walkers[0].load() == 1);
    (void)reclaim_set_aside(c);  // must not zero it while we may walk it
    uint32_t kept = 0;
    for (uint32_t i = 0; i < c.nr_spares; ++i) {
      const uint64_t w = c.spares[i].load();
      kept += sw_state(w) == SpareState::aside && sw_slot(w) == 0 ? 1 : 0;
    }
    CHECK(kept == 1);
    CHECK(load_word(c.slot_page(0)) == make_word(kKindData, kLen));  // intact under our walk
  });
  // The stalled recycler: when it runs again its hold was absorbed; it walks
  // its intact memory, and its CAS fails on the word.
  CHECK(recycle_overwrite(cb, 0, 0) == Recycle::raced);
  recycle_test_hook.store(nullptr);
  CHECK(g_stalled.in);
  CHECK(cb.walkers[0].load() == 0);
  const CpuStats s = rb.stats(0);  // reclaims the memory it kept
  CHECK(s.taken_over == 1);
  CHECK(s.lost_busy == 0);
  CHECK(s.lost() == 0);
  CHECK(s.set_aside == 0);
  CHECK(s.conserved(g_stalled.written));
  CHECK(empty_spares(cb) == cb.nr_spares);
  ConsumingReader reader(rb, 0);
  const std::vector<Got> got = drain(reader);
  REQUIRE(!got.empty());
  for (const Got& g : got) CHECK(g.uniform);
  CHECK(got.back().tag == 10 + 14);  // the newest record
  for (uint64_t idx = 0; idx < rb.nr_subbufs(); ++idx)
    CHECK(pw_holders(cb.positions[idx].load()) == 0);
}

// The same takeover when the stalled recycler had found a pending record and
// was about to swap (forced at (X2) with the swap hook): the writer that takes
// over sets the sub-buffer aside with its own spare; the stalled one's CAS
// fails, its spare goes back EMPTY, its hold is given back through walkers.
TEST_CASE("takeover: a recycler stalled before its swap's CAS (X2) is taken over",
          "[buffers][overwrite][set_aside][takeover]") {
  OverwriteRingBuffer rb(kSetAsideRing, &fake_clock);
  CpuBuffer& cb = rb.cpu_buffer(0);
  g_stalled = Stalled{&rb};
  REQUIRE(put(rb, 0, kLen, 1));
  Reservation pending = rb.reserve(0, kLen);
  REQUIRE(pending);
  REQUIRE(put(rb, 0, kLen, 2));
  REQUIRE(put(rb, 0, rb.max_payload(), 3));  // the tail moves to position 1
  g_stalled.written = 4;
  const HookReset<swap_test_hook> reset;
  swap_test_hook.store([](CpuBuffer& c, uint64_t idx) {
    if (g_stalled.in || idx != 0) return;
    g_stalled.in = true;
    CHECK(pw_holders(c.positions[0].load()) == 1);
    for (int i = 0; i < 15; ++i, ++g_stalled.written)
      CHECK(put(*g_stalled.rb, 0, g_stalled.rb->max_payload(), static_cast<uint8_t>(10 + i)));
    CHECK(c.set_aside.load() == 1);  // by the writer that took over
    CHECK(c.walkers[0].load() == 1);
  });
  CHECK(recycle_overwrite(cb, 0, 0) == Recycle::raced);
  swap_test_hook.store(nullptr);
  CHECK(g_stalled.in);
  CHECK(cb.walkers[0].load() == 0);
  std::memset(pending.payload().data(), 0xEE, kLen);
  rb.commit(pending);  // into the set-aside memory
  const CpuStats s = rb.stats(0);
  CHECK(s.set_aside == 1);
  CHECK(s.lost_set_aside == 1);  // the stalled writer's own record only
  CHECK(s.lost_busy == 0);
  CHECK(s.commit_overrun == 0);
  CHECK(s.conserved(g_stalled.written));
  CHECK(empty_spares(cb) == cb.nr_spares);
  ConsumingReader reader(rb, 0);
  for (const Got& g : drain(reader)) {
    CHECK(g.uniform);
    CHECK(g.tag != 0xEE);
  }
}

TEST_CASE("set aside: more stalled writers than spares: the rest drop as before, then all recover",
          "[buffers][overwrite][set_aside]") {
  OverwriteRingBuffer rb(kSetAsideRing, &fake_clock);
  CpuBuffer& cb = rb.cpu_buffer(0);
  const uint32_t n = cb.nr_spares + 2;
  std::vector<Reservation> held;
  uint64_t written = 0;
  int tag = 0;
  // One stalled record in each of n consecutive sub-buffers (4 records each).
  for (uint32_t k = 0; k < n; ++k) {
    held.push_back(rb.reserve(0, kLen));
    REQUIRE(held.back());
    ++written;
    for (int i = 0; i < 3; ++i, ++written) {
      g_fake_now.fetch_add(1);
      (void)put(rb, 0, kLen, static_cast<uint8_t>(1 + tag++ % 250));
    }
  }
  // A stalled record pins its sub-buffer until a spare takes its place; with
  // every spare holding one, the next switch drops (commit_overrun).
  for (int i = 0; i < 40; ++i, ++written) {
    g_fake_now.fetch_add(1);
    (void)put(rb, 0, kLen, static_cast<uint8_t>(1 + tag++ % 250));
  }
  CpuStats s = rb.stats(0);
  CHECK(s.set_aside == cb.nr_spares);
  CHECK(empty_spares(cb) == 0);
  CHECK(s.commit_overrun > 0);   // dropped at the switch: no spare left
  CHECK(s.lost_set_aside == 0);  // none of the stalled records is committed yet
  for (Reservation& r : held) {
    std::memset(r.payload().data(), 0xEE, kLen);
    rb.commit(r);
  }
  // Committed: the set-aside memory comes back, and the ring runs on.
  for (int i = 0; i < 40; ++i, ++written) {
    g_fake_now.fetch_add(1);
    CHECK(put(rb, 0, kLen, static_cast<uint8_t>(1 + tag++ % 250)));
  }
  ConsumingReader reader(rb, 0);
  for (const Got& g : drain(reader)) CHECK(g.uniform);
  s = rb.stats(0);
  CHECK(s.lost_set_aside == cb.nr_spares);  // each set-aside writer's own record, once
  CHECK(s.conserved(written));
  CHECK(empty_spares(cb) == cb.nr_spares);
}

// Many writers per CPU buffer, each yielding between reserve and commit now
// and then (a preempted writer), with a consuming reader: no torn record,
// no lost neighbour beyond what the spares cannot cover, conservation exact.
TEST_CASE("set aside stress: 12 writers on one CPU buffer yield between reserve and commit",
          "[buffers][overwrite][set_aside][stress]") {
#if defined(TRACEPIPE_SANITIZED)
  constexpr int kIters = 4000;
#else
  constexpr int kIters = 40000;
#endif
  constexpr int kWriters = 12;
  OverwriteRingBuffer rb(RingBufferConfig{.cpus = 1, .size_per_cpu = 2048, .subbuf_size = 256},
                         &fake_clock);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> torn{0}, read{0};
  std::thread reader([&] {
    ConsumingReader r(rb, 0);
    while (!done.load()) {
      while (auto v = r.next()) {
        const Got g = got_of(*v);
        if (!g.uniform) torn.fetch_add(1);
        read.fetch_add(1);
      }
      sched_yield();
    }
    while (auto v = r.next()) {
      if (!got_of(*v).uniform) torn.fetch_add(1);
      read.fetch_add(1);
    }
  });
  std::vector<std::thread> ws;
  for (int t = 0; t < kWriters; ++t) {
    ws.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        const uint32_t len = 8 + 8 * static_cast<uint32_t>((i + t) % 7);
        Reservation r = rb.reserve(0, len);
        if (!r) continue;
        std::memset(r.payload().data(), (t * 16 + i) & 0xff, len);
        if ((i + t) % 37 == 0) sched_yield();  // preempted between reserve and commit
        rb.commit(r);
      }
    });
  }
  for (auto& w : ws) w.join();
  done.store(true);
  reader.join();
  CHECK(torn.load() == 0);
  const CpuStats s = rb.stats(0);
  CHECK(s.conserved(uint64_t{kWriters} * kIters));
  CHECK(s.read == read.load());
  for (uint64_t idx = 0; idx < rb.nr_subbufs(); ++idx)
    CHECK(pw_pins(rb.cpu_buffer(0).positions[idx].load()) == 0);
  CHECK(empty_spares(rb.cpu_buffer(0)) == rb.cpu_buffer(0).nr_spares);
}

// The whole-sub-buffer reader (buffers/subbuf_reader.h: the recorder's drain,
// replay -o) walks each position's memory through its slot word while it
// pins it (I6): after a swap it must read the spare's memory, where the
// ring's records are, and never the set-aside memory.
TEST_CASE("set aside: the sub-buffer reader reads each position where its memory is now",
          "[buffers][overwrite][set_aside]") {
  OverwriteRingBuffer rb(kSetAsideRing, &fake_clock);
  CpuBuffer& cb = rb.cpu_buffer(0);
  Reservation stalled = rb.reserve(0, kLen);  // the first record of position 0
  REQUIRE(stalled);
  uint64_t written = 1;
  for (int i = 0; i < 30; ++i, ++written) {
    g_fake_now.fetch_add(1);
    REQUIRE(put(rb, 0, kLen, static_cast<uint8_t>(1 + i)));
  }
  REQUIRE(cb.set_aside.load() == 1);
  REQUIRE(cb.slots[0].load() != 0);  // position 0 holds records of lap 1, in a spare's memory
  std::vector<Got> want;
  {
    Iterator it(rb, 0);
    want = drain(it);
  }
  REQUIRE(want.size() >= 3 * 4);
  std::memset(stalled.payload().data(), 0xEE, kLen);
  rb.commit(stalled);  // into the set-aside memory: no reader may see it
  struct Sink {
    std::vector<Got> got;
    size_t mark = 0;
    void record(uint64_t ts, std::span<const std::byte> p) {
      Got g{ts, 0, p.empty() ? uint8_t{0} : static_cast<uint8_t>(p[0]), p.size(), true};
      for (std::byte b : p) g.uniform &= static_cast<uint8_t>(b) == g.tag;
      got.push_back(g);
    }
    void rollback() { got.resize(mark); }
  } sink;
  SubbufReader rd(rb, 0);
  for (int guard = 0; guard < 100; ++guard) {
    sink.mark = sink.got.size();
    if (rd.consume(sink, /*include_open=*/true) == Taken::none) break;
  }
  REQUIRE(sink.got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("record " << i);
    CHECK(sink.got[i].uniform);
    CHECK(sink.got[i].len == kLen);
    CHECK(sink.got[i].tag == want[i].tag);
    CHECK(sink.got[i].ts == want[i].ts);
    CHECK(sink.got[i].tag != 0xEE);
  }
  CHECK(sink.got.back().tag == 30);  // the newest record
  const CpuStats s = rb.stats(0);
  CHECK(s.read == want.size());
  CHECK(s.lost_set_aside == 1);
  CHECK(s.entries == 0);
  CHECK(s.conserved(written));
}

// A recorder sums a CPU's loss counters itself (core/record/recorder.cc),
// not through stats(), which reclaims first. The stalled writer's commit
// into set-aside memory is one store that cannot count its own loss, so
// until a reclaim that record is read, overrun and lost nowhere: the reader
// reads them through SubbufReader::losses(), which settles the set-aside
// sub-buffers first.
TEST_CASE("set aside: a reader's losses() find the stalled record (the raw counters do not)",
          "[buffers][overwrite][set_aside]") {
  std::function<void()> nested;
  bool in_nested = false;
  StallRB rb(kSetAsideRing, &fake_clock, StallHooks{Step::reserved, &nested, &in_nested});
  int tag = 0;
  REQUIRE(write_n(rb, 2, tag) == 2);
  constexpr int kNested = 3 * 5 * 4;  // 3 laps while the writer is stalled
  int nested_ok = 0;
  nested = [&] { nested_ok = write_n(rb, kNested, tag); };
  g_fake_now.fetch_add(1);
  Reservation stalled = rb.reserve(0, kLen);
  REQUIRE(stalled);
  REQUIRE(nested_ok == kNested);
  rb.commit(stalled);  // into the set-aside memory
  const uint64_t written = 2 + 1 + kNested;
  struct Count {
    uint64_t n = 0, mark = 0;
    void record(uint64_t, std::span<const std::byte>) { ++n; }
    void rollback() { n = mark; }
  } sink;
  SubbufReader rd(rb, 0);
  for (int guard = 0; guard < 100; ++guard) {
    sink.mark = sink.n;
    if (rd.consume(sink, /*include_open=*/true) == Taken::none) break;
  }
  const CpuBuffer& cb = rd.cpu_buffer();
  const auto summed = [&] {
    return cb.read.load() + cb.overrun.load() + cb.lost_set_aside.load() +
           cb.commit_overrun.load() + cb.lost_busy.load() + cb.lost_full.load() +
           cb.lost_paused.load() + cb.lost_too_big.load() + cb.padded.load() + cb.reclaimed.load();
  };
  REQUIRE(cb.set_aside.load() == 1);
  CHECK(cb.read.load() == sink.n);
  CHECK(cb.lost_set_aside.load() == 0);  // nobody reclaimed yet: a spare was free
  CHECK(summed() == written - 1);        // the stalled record reaches no one
  const LossCounts l = rd.losses();
  CHECK(l.lost_set_aside == 1);
  CHECK(cb.lost_set_aside.load() == 1);
  CHECK(summed() == written);
  CHECK(rd.losses().lost_set_aside == 1);  // counted once
  CHECK(summed() == written);
  CHECK(empty_spares(cb) == cb.nr_spares);  // and the memory is a spare again
  const CpuStats s = rb.stats(0);
  CHECK(s.entries == 0);
  CHECK(s.lost_set_aside == 1);
  CHECK(s.conserved(written));
}
