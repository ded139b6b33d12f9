// Break-it: the TRACEPIPE_TRACE fan-out (one WriterScope for every
// subscribed instance) under control-plane churn, signal handlers that trace
// the same event, and pause()/resume() racing writers and a consuming reader.
// Every test checks exact counts (EventStats, CpuStats conservation).
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "test_support.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/thread_context.h"

using namespace tracepipe;

namespace {

using Fan = EventDecl<"tpbreak", "fan", Int<"value", uint32_t>, Int<"seq", uint32_t>>;

void pin_to_cpu(uint32_t cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)), &set);
  sched_setaffinity(0, sizeof set, &set);
}

InstanceOptions opts(Staging s, BufferMode m = BufferMode::overwrite, uint64_t kb = 64) {
  InstanceOptions o;
  o.buffer_size_kb = kb;
  o.mode = m;
  o.staging = s;
  return o;
}

}  // namespace

TEST_CASE("fan-out: counts stay exact while other instances churn", "[fanout][breakit]") {
  constexpr uint32_t kPerThread = 100000;
  Instance base(opts(Staging::per_thread));
  base.enable(Fan::desc());
  REQUIRE(base.set_filter(Fan::desc(), "value & 1").ok());
  Instance plain(opts(Staging::per_cpu));
  plain.enable(Fan::desc());

  std::atomic<int> running{2};
  std::atomic<uint32_t> rounds{0};
  std::vector<std::thread> writers;
  for (uint32_t t = 0; t < 2; ++t)
    writers.emplace_back([&, t] {
      pin_to_cpu(t);
      prepare_thread();
      for (uint32_t i = 0; i < kPerThread; ++i) {
        // On a loaded 2-CPU machine the writers can finish before the control
        // thread runs at all (CI saw 0 rounds). Halfway, each writer waits
        // for two more rounds, so at least one whole round of churn runs
        // between its first and its second half, whatever the scheduler does.
        if (i == kPerThread / 2) {
          const uint32_t r0 = rounds.load();
          while (rounds.load() < r0 + 2) std::this_thread::yield();
        }
        TRACEPIPE_TRACE(Fan, i, t);
      }
      running.fetch_sub(1);
    });
  // Control plane: instances come and go, filters swap (base's to an
  // equivalent program), events toggle, buffers pause.
  const Staging kinds[] = {Staging::off, Staging::per_cpu, Staging::per_thread, Staging::adaptive};
  while (running.load() != 0) {
    auto x = std::make_unique<Instance>(opts(kinds[rounds % 4]));
    x->enable(Fan::desc());
    REQUIRE(
        x->set_filter(Fan::desc(), rounds % 2 ? "CPU == 0 && value > 10" : "comm ~ \"*\"").ok());
    REQUIRE(base.set_filter(Fan::desc(), rounds % 2 ? "value & 1 && value < 1000000" : "value & 1")
                .ok());
    x->enable(Fan::desc(), false);
    x->enable(Fan::desc(), true);
    (void)x->pause();
    x->resume();
    plain.set_soft_disabled(Fan::desc(), false);
    x.reset();
    rounds.fetch_add(1);
  }
  for (auto& w : writers) w.join();
  const EventStats b = base.event_stats(Fan::desc());
  CHECK(b.emitted() == 2 * kPerThread);
  CHECK(b.kept + b.lost == kPerThread);  // the odd values
  CHECK(b.discarded == kPerThread);
  const EventStats p = plain.event_stats(Fan::desc());
  CHECK(p.emitted() == 2 * kPerThread);
  CHECK(p.discarded == 0);
  uint64_t attempts = 0;
  for (const auto& s : plain.cpu_stats()) attempts += s.accounted();
  CHECK(attempts == plain.ring_attempts());
  INFO("control rounds " << rounds.load());
  CHECK(rounds.load() >= 2);  // the midpoint wait above makes this hold
}

namespace {
std::atomic<uint32_t> g_handled{0};
void on_usr1(int) {
  SignalScope s;
  TRACEPIPE_TRACE(Fan, 0xFFFFFFFFu, 0);
  g_handled.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

TEST_CASE("fan-out: signal handlers tracing the same event get 'h' and the nesting depth",
          "[fanout][breakit]") {
  constexpr uint32_t kOuter = 200000;
  g_handled = 0;
  struct sigaction sa {};
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &sa, nullptr) == 0);
  Instance all(opts(Staging::per_thread, BufferMode::drop_newest, 16384));
  Instance odd(opts(Staging::per_cpu, BufferMode::drop_newest, 16384));
  all.enable(Fan::desc());
  odd.enable(Fan::desc());
  REQUIRE(odd.set_filter(Fan::desc(), "value & 1").ok());

  // At most this many signals, except while the writer waits for one
  // halfway: under TSan a handler's emit is far cheaper than the writer's
  // loop step, and unbounded signals (1.38 M in one run) filled the ring.
  constexpr uint32_t kMaxSignals = 100000;
  std::atomic<bool> ready{false}, done{false}, stopped{false}, waiting{false};
  const uint64_t drops0 = unregistered_drops();
  std::thread w([&] {
    prepare_thread();  // handlers never register: they would drop
    ready = true;
    for (uint32_t i = 0; i < kOuter; ++i) {
      // The signaller may not run before the loop ends on a loaded machine:
      // halfway, wait for a handler to run here, so at least one nests.
      if (i == kOuter / 2) {
        const uint32_t h0 = g_handled.load();
        waiting = true;
        while (g_handled.load() == h0) std::this_thread::yield();
        waiting = false;
      }
      TRACEPIPE_TRACE(Fan, i * 2, i);  // even: odd drops them
    }
    done = true;
    while (!stopped.load()) std::this_thread::yield();  // no signal during thread exit
  });
  while (!ready.load()) std::this_thread::yield();
  const pthread_t wh = w.native_handle();
  uint32_t sent = 0;
  while (!done.load()) {
    if ((sent < kMaxSignals || waiting.load()) && pthread_kill(wh, SIGUSR1) == 0) ++sent;
    for (int k = 0; k < 200; ++k) asm volatile("" ::: "memory");
  }
  stopped = true;
  w.join();
  CHECK(unregistered_drops() == drops0);
  signal(SIGUSR1, SIG_DFL);
  const uint32_t handled = g_handled.load();
  INFO("signals sent " << sent << " handled " << handled);
  REQUIRE(handled > 0);

  const EventStats a = all.event_stats(Fan::desc());
  CHECK(a.lost == 0);
  CHECK(a.kept == kOuter + handled);
  const EventStats o = odd.event_stats(Fan::desc());
  CHECK(o.kept == handled);
  CHECK(o.discarded == kOuter);

  uint64_t outer = 0, inner = 0, inner_nested = 0;
  uint32_t next_seq = 0;
  auto m = buffers::merged_consumer(all.ring());
  while (auto r = m.next()) {
    CommonHeader h{};
    std::memcpy(&h, r->payload.data(), sizeof h);
    uint32_t value = 0, seq = 0;
    std::memcpy(&value, r->payload.data() + 8, 4);
    std::memcpy(&seq, r->payload.data() + 12, 4);
    if (value == 0xFFFFFFFFu) {
      ++inner;
      CHECK(h.common_flags == TraceFlag::hardirq);
      CHECK(h.common_preempt_count <= 1);
      inner_nested += h.common_preempt_count;
    } else {
      ++outer;
      CHECK(h.common_flags == 0);
      CHECK(h.common_preempt_count == 0);
      CHECK(seq == next_seq);  // outer records in program order
      next_seq = seq + 1;
    }
  }
  CHECK(outer == kOuter);
  CHECK(inner == handled);
  auto mo = buffers::merged_consumer(odd.ring());
  uint64_t odd_records = 0;
  while (auto r = mo.next()) {
    CommonHeader h{};
    std::memcpy(&h, r->payload.data(), sizeof h);
    CHECK(h.common_flags == TraceFlag::hardirq);
    ++odd_records;
  }
  CHECK(odd_records == handled);
}

TEST_CASE("pause: every writer on both CPUs stops while a reader races, counts conserve",
          "[pause][breakit]") {
  for (WriterMode wm : {WriterMode::any_cpu, WriterMode::automatic}) {
    InstanceOptions o = opts(Staging::per_thread, BufferMode::drop_newest, 64);
    o.writers = wm;
    Instance inst(o);
    inst.enable(Fan::desc());
    std::atomic<bool> stop{false};
    // Odd while paused: set after pause() returned, cleared before resume().
    std::atomic<uint64_t> gen{0};
    std::atomic<uint64_t> kept_after_pause{0}, tried_while_paused{0};
    std::atomic<uint64_t> tried_by[2] = {0, 0};
    std::vector<std::thread> writers;
    for (uint32_t t = 0; t < 2; ++t)
      writers.emplace_back([&, t] {
        pin_to_cpu(t);
        prepare_thread();
        for (uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
          const uint64_t g = gen.load(std::memory_order_seq_cst);
          const EmitResult r = Fan::emit(inst, i, t);
          // Started after pause() returned and ended before resume() began.
          if ((g & 1) && gen.load(std::memory_order_seq_cst) == g) {
            tried_while_paused.fetch_add(1, std::memory_order_relaxed);
            tried_by[t].fetch_add(1, std::memory_order_relaxed);
            if (r == EmitResult::kept) kept_after_pause.fetch_add(1, std::memory_order_relaxed);
          }
        }
      });
    std::atomic<uint64_t> consumed{0};
    std::thread reader([&] {
      auto m = buffers::merged_consumer(inst.ring());
      while (!stop.load()) {
        while (m.next()) consumed.fetch_add(1, std::memory_order_relaxed);
        std::this_thread::yield();
      }
    });
    for (int round = 0; round < 40; ++round) {
      const buffers::PauseFence f = inst.pause();
      REQUIRE(f != buffers::PauseFence::failed);
      REQUIRE(inst.paused());
      const uint64_t b0 = tried_by[0].load(), b1 = tried_by[1].load();
      gen.fetch_add(1, std::memory_order_seq_cst);
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      // A loaded machine may not run a writer in 3 ms (or in any round):
      // the pause stays until each writer has tried a whole emit inside it.
      // They spin until stop and gen holds still meanwhile, so this ends.
      while (tried_by[0].load() == b0 || tried_by[1].load() == b1) std::this_thread::yield();
      gen.fetch_add(1, std::memory_order_seq_cst);
      inst.resume();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    INFO("writers " << to_string(wm) << " emits while paused " << tried_while_paused.load());
    CHECK(tried_while_paused.load() >= 2 * 40);  // the wait above makes this hold
    CHECK(kept_after_pause.load() == 0);  // no reserve that starts after pause() returns succeeds
    stop = true;
    for (auto& w : writers) w.join();
    reader.join();
    uint64_t rest = 0;
    auto m = buffers::merged_consumer(inst.ring());
    while (m.next()) ++rest;
    const EventStats es = inst.event_stats(Fan::desc());
    uint64_t lost_ring = 0, accounted = 0, read = 0;
    for (const auto& s : inst.cpu_stats()) {
      lost_ring += s.lost();
      accounted += s.accounted();
      read += s.read;
    }
    CHECK(es.kept == consumed.load() + rest);
    CHECK(read == consumed.load() + rest);
    CHECK(es.lost == lost_ring);
    CHECK(accounted == inst.ring_attempts());
  }
}
