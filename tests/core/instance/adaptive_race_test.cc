// Adversarial tests of adaptive staging's per-event choice (core/instance/instance.h,
// "Staging policies"; core/instance/fast_path.h, instance.cc adaptive_*): writers
// with different acceptance rates flip the event's kThreadStaging bit while a
// control thread changes its filter, soft-disable (API and config) and
// enable; a signal handler emits the same event during the flips. What must
// hold: a control change is never undone by a flip (once every writer has
// started a new emit after it, the change is in force); every emit is
// counted once, on one path; the ring's conservation holds; per_thread
// instances never go direct.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "test_events.h"
#include "test_support.h"
#include "tracepipe/core/config/config.h"

using namespace tracepipe;
using namespace tp_core_test;

namespace {

struct alignas(64) WriterTally {
  std::atomic<uint64_t> iter{0};
  std::atomic<uint64_t> kept{0}, discarded{0}, lost{0}, disabled{0};
};

void tally(WriterTally& t, EmitResult r) {
  switch (r) {
    case EmitResult::kept:
      t.kept.fetch_add(1, std::memory_order_relaxed);
      break;
    case EmitResult::discarded:
      t.discarded.fetch_add(1, std::memory_order_relaxed);
      break;
    case EmitResult::lost:
      t.lost.fetch_add(1, std::memory_order_relaxed);
      break;
    case EmitResult::disabled:
      t.disabled.fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

// Acceptance pattern of writer `id` under the normal filter "value != 0":
// 100%, 0%, 50%, 95%.
uint32_t value_of(int id, uint64_t i) {
  switch (id) {
    case 0:
      return 1;
    case 1:
      return 0;
    case 2:
      return static_cast<uint32_t>(i & 1);
    default:
      return i % 20 != 0 ? 1 : 0;
  }
}

}  // namespace

TEST_CASE(
    "adaptive: flips by disagreeing writers never undo filter, soft-disable or enable changes",
    "[core][adaptive][concurrency]") {
  const BufferMode mode = GENERATE(BufferMode::overwrite, BufferMode::drop_newest);
  CAPTURE(static_cast<int>(mode));
  InstanceOptions o = small_options(Staging::adaptive, mode);
  Instance inst(o);
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());

  constexpr int kWriters = 4;
  WriterTally t[kWriters];
  std::atomic<bool> stop{false};
  std::vector<std::thread> ws;
  for (int id = 0; id < kWriters; ++id)
    ws.emplace_back([&, id] {
      prepare_thread();
      // The accepting writer goes first, alone: its 32nd staged accept sends
      // the event direct and its 33rd emit goes so (the ring is empty then).
      // Else a loaded machine may run the others first, and in drop_newest
      // they can fill the unread ring before any check sees 32 kept accepts:
      // the event would never go direct and s.direct > 0 would fail.
      if (id != 0)
        while (t[0].iter.load(std::memory_order_acquire) < 33) std::this_thread::yield();
      for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        tally(t[id], Sample::emit(inst, value_of(id, i), static_cast<uint32_t>(i), ""));
        t[id].iter.store(i + 1, std::memory_order_release);
      }
    });

  // Waits until every writer finished `n` more emits than when called: each
  // has then started at least n-1 emits after the caller's last change.
  auto wait_emits = [&](uint64_t n) {
    uint64_t base[kWriters];
    for (int id = 0; id < kWriters; ++id) base[id] = t[id].iter.load(std::memory_order_acquire);
    for (int id = 0; id < kWriters; ++id)
      while (t[id].iter.load(std::memory_order_acquire) < base[id] + n) std::this_thread::yield();
  };
  auto kept_now = [&] {
    uint64_t k = 0;
    for (auto& x : t) k += x.kept.load();
    return k;
  };
  // Liveness: kept, or lost (drop_newest: the ring is full, nobody reads).
  auto kept_or_lost = [&] {
    uint64_t k = 0;
    for (auto& x : t) k += x.kept.load() + x.lost.load();
    return k;
  };
  auto enabled_returns = [&] {
    uint64_t k = 0;
    for (auto& x : t) k += x.kept.load() + x.discarded.load() + x.lost.load();
    return k;
  };
  auto soft_via_config = [&](bool on) {
    InstanceConfig ic;
    EventSettings es;
    es.pattern = "tptest:sample";
    es.soft_disable = on;
    ic.events.push_back(es);
    inst.apply(ic);
  };

  std::mt19937 rng(7);
  uint64_t violations = 0, rounds_blocking = 0;
  for (int round = 0; round < 60; ++round) {
    // Normal state: writers disagree, the choice flips back and forth.
    wait_emits(300);
    const uint32_t op = rng() % 5;
    switch (op) {
      case 0:
        inst.set_soft_disabled(Sample::desc(), true);
        break;
      case 1:
        soft_via_config(true);
        break;
      case 2:
        REQUIRE(inst.set_filter(Sample::desc(), "value > 1000").ok());
        break;
      case 3:
        inst.enable(Sample::desc(), false);
        break;
      case 4:
        inst.clear_filter(Sample::desc());
        break;
    }
    wait_emits(2);
    const uint64_t k0 = kept_now(), e0 = enabled_returns();
    wait_emits(200);
    const uint64_t k1 = kept_now(), e1 = enabled_returns();
    // While soft-disabled, rejecting everything or disabled, nothing is kept;
    // disabled, nothing is even counted.
    if (op <= 3) {
      ++rounds_blocking;
      if (k1 != k0) {
        ++violations;
        UNSCOPED_INFO("round " << round << " op " << op << ": kept went " << k0 << " -> " << k1);
      }
    }
    if (op == 3 && e1 != e0) {
      ++violations;
      UNSCOPED_INFO("round " << round << ": emits counted while disabled " << e0 << " -> " << e1);
    }
    if (op == 4) CHECK(inst.event_stats(Sample::desc()).unfiltered > 0);
    CHECK(inst.enabled(Sample::desc()) == (op != 3));
    CHECK(inst.soft_disabled(Sample::desc()) == (op <= 1));
    // Back to normal.
    switch (op) {
      case 0:
        inst.set_soft_disabled(Sample::desc(), false);
        break;
      case 1:
        soft_via_config(false);
        break;
      case 2:
      case 4:
        REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
        break;
      case 3:
        inst.enable(Sample::desc(), true);
        break;
    }
    CHECK(inst.enabled(Sample::desc()));
    CHECK(!inst.soft_disabled(Sample::desc()));
    CHECK(inst.filter(Sample::desc()) == "value != 0");
    const uint64_t k2 = kept_or_lost();
    wait_emits(100);
    CHECK(kept_or_lost() > k2);  // the accepting writers keep again
  }
  // Fast toggles, each read back a moment later: a flip that loaded the
  // flags word before the change and stored it after would show here.
  uint64_t undone = 0;
  for (int k = 0; k < 100000; ++k) {
    const bool on = (k & 1) == 0;
    if (k % 4 < 2)
      inst.set_soft_disabled(Sample::desc(), on);
    else
      inst.enable(Sample::desc(), !on);
    for (int spin = 0; spin < 200; ++spin) asm volatile("" ::: "memory");
    if (inst.soft_disabled(Sample::desc()) != (k % 4 == 0)) ++undone;
    if (inst.enabled(Sample::desc()) != (k % 4 != 2)) ++undone;
  }
  CHECK(undone == 0);
  stop = true;
  for (auto& th : ws) th.join();
  CHECK(violations == 0);
  CHECK(rounds_blocking > 0);

  WriterTally sum;
  for (auto& x : t) {
    sum.kept += x.kept.load();
    sum.discarded += x.discarded.load();
    sum.lost += x.lost.load();
  }
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.kept == sum.kept.load());
  CHECK(s.discarded == sum.discarded.load());
  CHECK(s.lost == sum.lost.load());
  CHECK(s.unfiltered + s.staged + s.direct == s.emitted());
  CHECK(s.nested == 0);
  CHECK(s.contended == 0);
  CHECK(s.too_big == 0);
  CHECK(s.adaptive_direct == s.direct);
  CHECK(s.staged > 0);
  CHECK(s.direct > 0);
  CHECK(total_accounted(inst) == inst.ring_attempts());

  // The event's state is still whole: one thread, exact outcomes.
  for (uint32_t i = 0; i < 2000; ++i) {
    const uint32_t v = (i / 100) % 2;  // runs of 100 accepted, 100 rejected: flips both ways
    const EmitResult r = Sample::emit(inst, v, i, "");
    if (v != 0)
      REQUIRE(
          (r == EmitResult::kept || (mode == BufferMode::drop_newest && r == EmitResult::lost)));
    else
      REQUIRE((r == EmitResult::discarded ||
               (mode == BufferMode::drop_newest && r == EmitResult::lost)));
  }
}

// A signal handler on the emitting thread emits the same adaptive event into
// the same instance while the thread's own emits flip the choice both ways
// (runs of accepts and rejects) and another thread keeps changing the
// filter. Every emit, outer or nested, is counted once; the ring conserves.
namespace {
Instance* g_sig_inst = nullptr;
std::atomic<uint64_t> g_sig_counts[4];
std::atomic<uint32_t> g_sig_seq{0};
void on_sigusr1(int) {
  SignalScope scope;
  const uint32_t s = g_sig_seq.fetch_add(1, std::memory_order_relaxed);
  const EmitResult r = Sample::emit(*g_sig_inst, (s / 8) % 2, s, "sig");
  g_sig_counts[static_cast<int>(r)].fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

TEST_CASE("adaptive: a signal handler emitting the same event during flips is counted once",
          "[core][adaptive][signal][concurrency]") {
  InstanceOptions o = small_options(Staging::adaptive, BufferMode::overwrite);
  Instance inst(o);
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  g_sig_inst = &inst;
  for (auto& c : g_sig_counts) c = 0;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);

  std::atomic<bool> stop{false}, started{false};
  uint64_t outer[4] = {};
  pthread_t writer_handle{};
  std::thread writer([&] {
    prepare_thread();
    writer_handle = pthread_self();
    started = true;
    for (uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      // Runs: 40 accepted (a staged check sends the event direct), 6 rejected
      // (the direct average falls: staging again).
      const uint32_t v = (i % 46) < 40 ? 1 : 0;
      ++outer[static_cast<int>(Sample::emit(inst, v, i, "outer"))];
    }
    // A signal sent before stop is pending by now: this system call lets it
    // land here, while the thread's context is live (not in its teardown).
    std::this_thread::yield();
  });
  while (!started) std::this_thread::yield();
  std::thread control([&] {
    for (int k = 0; !stop.load(std::memory_order_relaxed); ++k) {
      if (k % 2)
        (void)inst.set_filter(Sample::desc(), "value != 0");
      else
        (void)inst.set_filter(Sample::desc(), "value == 1 || seq == 4294967295");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  // kMinSent signals, and on until kMinHandled were handled: a loaded
  // machine may give the writer few turns, and signals sent meanwhile merge.
  // The writer spins until stop, so each turn it gets handles one.
  constexpr uint32_t kMinHandled = 200;
  constexpr uint64_t kMinSent = 400000;
  uint64_t sent = 0;
  while (sent < kMinSent || g_sig_seq.load() < kMinHandled) {
    pthread_kill(writer_handle, SIGUSR1);
    ++sent;
    if (sent % 64 == 0) std::this_thread::yield();
  }
  stop = true;
  writer.join();
  control.join();
  sigaction(SIGUSR1, &old, nullptr);

  const uint64_t sig_kept = g_sig_counts[0], sig_disc = g_sig_counts[1], sig_lost = g_sig_counts[2];
  INFO("signals sent " << sent << ", handled " << g_sig_seq.load() << ", outer emits "
                       << outer[0] + outer[1] + outer[2]);
  CHECK(g_sig_seq.load() >= kMinHandled);  // the loop above makes this hold
  CHECK(g_sig_counts[3] == 0);             // never disabled
  CHECK(outer[3] == 0);
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.kept == outer[0] + sig_kept);
  CHECK(s.discarded == outer[1] + sig_disc);
  CHECK(s.lost == outer[2] + sig_lost);
  CHECK(s.unfiltered + s.staged + s.direct == s.emitted());
  CHECK(s.adaptive_direct + s.nested == s.direct);
  CHECK(s.staged > 0);
  CHECK(total_accounted(inst) == inst.ring_attempts());
}

// per_thread instances share the lane (and its every-32nd-accept call) with
// adaptive ones: they must never go direct.
TEST_CASE("adaptive: a per_thread instance never goes direct, whatever it accepts",
          "[core][adaptive]") {
  Instance inst(small_options(Staging::per_thread, BufferMode::overwrite));
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  for (uint32_t i = 0; i < 5000; ++i) REQUIRE(Sample::emit(inst, 1, i, "") == EmitResult::kept);
  for (uint32_t i = 0; i < 100; ++i) REQUIRE(Sample::emit(inst, 0, i, "") == EmitResult::discarded);
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.staged == 5100);
  CHECK(s.direct == 0);
  CHECK(s.adaptive_direct == 0);
}

// Two adaptive instances on the same event: one's flips do not move the
// other's choice.
TEST_CASE("adaptive: the choice is per (instance, event)", "[core][adaptive]") {
  Instance a(small_options(Staging::adaptive, BufferMode::overwrite));
  Instance b(small_options(Staging::adaptive, BufferMode::overwrite));
  a.enable(Sample::desc());
  b.enable(Sample::desc());
  REQUIRE(a.set_filter(Sample::desc(), "value != 0").ok());
  REQUIRE(b.set_filter(Sample::desc(), "value == 0").ok());
  for (uint32_t i = 0; i < 1000; ++i) {
    REQUIRE(Sample::emit(a, 1, i, "") == EmitResult::kept);
    REQUIRE(Sample::emit(b, 1, i, "") == EmitResult::discarded);
  }
  CHECK(a.event_stats(Sample::desc()).staged == 32);
  CHECK(a.event_stats(Sample::desc()).adaptive_direct == 968);
  CHECK(b.event_stats(Sample::desc()).staged == 1000);
  CHECK(b.event_stats(Sample::desc()).direct == 0);
}

// Short-lived writers (their counter slices, adaptive score and window marks
// are folded and their contexts reused by the next threads) next to a
// long-lived accepting one that keeps sending the event direct: counts stay
// exact across the exits, and the ring conserves.
TEST_CASE("adaptive: writers that come and go during flips, counts exact across thread exits",
          "[core][adaptive][concurrency]") {
  Instance inst(small_options(Staging::adaptive, BufferMode::overwrite));
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> kept{0}, discarded{0}, lost{0}, steady_emits{0};
  auto add = [&](EmitResult r) {
    if (r == EmitResult::kept)
      ++kept;
    else if (r == EmitResult::discarded)
      ++discarded;
    else if (r == EmitResult::lost)
      ++lost;
  };
  std::thread steady([&] {
    for (uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      add(Sample::emit(inst, 1, i, ""));
      steady_emits.fetch_add(1, std::memory_order_release);
    }
  });
  for (int round = 0; round < 100; ++round) {
    // A loaded machine may not run the steady writer before the rounds end
    // (then nothing accepts 90%: no direct emit at all). Halfway, with no
    // other writer alive, wait for 66 of its emits: at most 64 staged
    // accepts bring a check over a window of 32 (a flip back may have
    // restarted it), which sends the event direct, and the next goes so.
    if (round == 50) {
      const uint64_t e0 = steady_emits.load(std::memory_order_acquire);
      while (steady_emits.load(std::memory_order_acquire) < e0 + 66) std::this_thread::yield();
    }
    std::thread a([&, round] {
      for (uint32_t i = 0; i < 2000; ++i)
        add(Sample::emit(inst, (i + round) % 3 == 0 ? 1 : 0, i, ""));
    });
    std::thread b([&, round] {
      for (uint32_t i = 0; i < 2000; ++i) add(Sample::emit(inst, (i / 40 + round) % 2, i, ""));
    });
    a.join();
    b.join();
  }
  stop = true;
  steady.join();
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.kept == kept.load());
  CHECK(s.discarded == discarded.load());
  CHECK(s.lost == lost.load());
  CHECK(s.unfiltered + s.staged + s.direct == s.emitted());
  CHECK(s.adaptive_direct == s.direct);
  CHECK(s.staged > 0);
  CHECK(s.direct > 0);
  CHECK(total_accounted(inst) == inst.ring_attempts());
}
