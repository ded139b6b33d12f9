// Ordering semantics of the fast path, pinned exactly (design.md "The fast
// path"): nesting, busy slots, migration, per-CPU time order, no loss or
// duplicate under concurrent writers, signals and filter swaps.
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "test_events.h"
#include "test_support.h"
#include "tracepipe/core/instance/testing/emit_hooks.h"

using namespace tracepipe;
using namespace tp_core_test;
using tracepipe::testing::EmitStep;

namespace {

using Pin = tp_test::PinToCpu;

std::atomic<Instance*> g_inst{nullptr};
std::atomic<uint32_t> g_nested_seq{0};
std::atomic<int> g_nested_result{-1};

void emit_nested(int) {
  Instance* inst = g_inst.load();
  if (inst == nullptr) return;
  g_nested_result.store(static_cast<int>(Nested::emit(*inst, g_nested_seq.load())));
}

struct SignalHandler {
  explicit SignalHandler(void (*fn)(int)) {
    struct sigaction sa {};
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, &old);
  }
  ~SignalHandler() { sigaction(SIGUSR1, &old, nullptr); }
  struct sigaction old {};
};

// Raises SIGUSR1 (whose handler emits a nested event) once, at `at`.
struct RaiseAt {
  EmitStep at;
  int* fired;
  void operator()(EmitStep s) const {
    if (s == at && *fired == 0) {
      *fired = 1;
      raise(SIGUSR1);
    }
  }
};

EmitResult emit_sample(Instance& inst, uint32_t value, uint32_t seq, RaiseAt hooks) {
  auto fill = [&](std::span<std::byte> rec) noexcept {
    Sample::write_fields(rec.data(), value, seq, "outer");
  };
  return tracepipe::testing::emit_fill(inst, Sample::desc(), Sample::fixed_size, fill, hooks);
}

struct Setup {
  Instance inst;
  explicit Setup(Staging st, const char* nested_filter) : inst(small_options(st)) {
    inst.enable(Sample::desc());
    inst.enable(Nested::desc());
    REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
    REQUIRE(inst.set_filter(Nested::desc(), nested_filter).ok());
    g_inst.store(&inst);
  }
  ~Setup() { g_inst.store(nullptr); }
};

uint64_t sum_discarded(const Instance& inst, uint64_t buffers::CpuStats::*field) {
  uint64_t n = 0;
  for (const auto& s : inst.cpu_stats()) n += s.*field;
  return n;
}

}  // namespace

TEST_CASE("ordering: a nested accepted event lands before the staged outer one",
          "[core][ordering][concurrency]") {
  SignalHandler h(emit_nested);
  for (Staging st : {Staging::per_thread, Staging::per_cpu, Staging::adaptive}) {
    INFO("staging " << to_string(st));
    const uint32_t cpu = current_cpu();
    Pin pin(cpu);
    REQUIRE(pin.ok());
    Setup s(st, "seq == 2");
    g_nested_seq.store(2);
    int fired = 0;
    REQUIRE(emit_sample(s.inst, 1, 1, {EmitStep::built_staged, &fired}) == EmitResult::kept);
    REQUIRE(fired == 1);
    CHECK(g_nested_result.load() == static_cast<int>(EmitResult::kept));
    const auto recs = drain_cpu(s.inst, cpu);
    REQUIRE(recs.size() == 2);
    // Buffer order: nested first (it went direct while the outer one sat in
    // its staging slot), then the outer one, copied in at commit.
    CHECK(recs[0].header().common_type == Nested::desc().id());
    CHECK(recs[1].header().common_type == Sample::desc().id());
    CHECK(recs[0].ts <= recs[1].ts);
    // The nested record says it ran in a signal handler, one level deep.
    CHECK(recs[0].header().common_flags == TraceFlag::hardirq);
    CHECK(recs[0].header().common_preempt_count == 1);
    CHECK(recs[0].header().common_pid == static_cast<int32_t>(gettid()));
    CHECK(recs[1].header().common_flags == 0);
    CHECK(recs[1].header().common_preempt_count == 0);
    const EventStats ns = s.inst.event_stats(Nested::desc());
    CHECK(ns.nested == 1);
    CHECK(ns.contended == 0);  // its own thread held the slot
    CHECK(ns.direct == 1);
    CHECK(ns.kept == 1);
    CHECK(s.inst.event_stats(Sample::desc()).staged == 1);
  }
}

TEST_CASE(
    "ordering: a thread preempted holding its CPU's slot sends the others there direct, counted as "
    "contended",
    "[core][ordering][concurrency]") {
  // Thread A stages on CPU c and, with the slot held, blocks (the hook joins
  // thread B); B, pinned to the same CPU, runs meanwhile, finds the slot
  // busy and reserves directly. The kernel cannot see this (it stages with
  // preemption off); tracepipe counts it apart from nesting.
  const uint32_t cpu = current_cpu();
  Pin pin(cpu);
  REQUIRE(pin.ok());
  Instance inst(small_options(Staging::per_cpu));
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
  EmitResult b_result = EmitResult::disabled;
  struct RunOtherThread {
    Instance* inst;
    uint32_t cpu;
    EmitResult* out;
    void operator()(EmitStep s) const {
      if (s != EmitStep::built_staged) return;
      std::thread([this] {
        Pin same(cpu);
        prepare_thread();
        *out = Sample::emit(*inst, 1, 2, "other");
      }).join();
    }
  };
  auto fill = [](std::span<std::byte> rec) noexcept {
    Sample::write_fields(rec.data(), 1, 1, "holder");
  };
  REQUIRE(tracepipe::testing::emit_fill(inst, Sample::desc(), Sample::fixed_size, fill,
                                        RunOtherThread{&inst, cpu, &b_result}) == EmitResult::kept);
  CHECK(b_result == EmitResult::kept);
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.contended == 1);
  CHECK(s.nested == 0);
  CHECK(s.direct == 1);
  CHECK(s.staged == 1);
  CHECK(s.kept == 2);
  // B's record first (it reserved while A's sat in the slot), then A's.
  const auto recs = drain_cpu(inst, cpu);
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].at<uint32_t>(12) == 2);
  CHECK(recs[1].at<uint32_t>(12) == 1);
  CHECK(recs[0].ts <= recs[1].ts);
}

TEST_CASE("ordering: a nested rejected event is reclaimed, the outer one still lands",
          "[core][ordering][concurrency]") {
  SignalHandler h(emit_nested);
  const uint32_t cpu = current_cpu();
  Pin pin(cpu);
  REQUIRE(pin.ok());
  Setup s(Staging::per_thread, "seq == 99");
  g_nested_seq.store(2);
  int fired = 0;
  REQUIRE(emit_sample(s.inst, 1, 1, {EmitStep::built_staged, &fired}) == EmitResult::kept);
  CHECK(g_nested_result.load() == static_cast<int>(EmitResult::discarded));
  const auto recs = drain_cpu(s.inst, cpu);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].header().common_type == Sample::desc().id());
  // The nested reservation was the last one when it was discarded: reclaimed.
  CHECK(sum_discarded(s.inst, &buffers::CpuStats::discarded) == 1);
  CHECK(sum_discarded(s.inst, &buffers::CpuStats::reclaimed) == 1);
}

TEST_CASE(
    "ordering: staging off — the outer reservation comes first, a rejected outer becomes padding",
    "[core][ordering][concurrency]") {
  SignalHandler h(emit_nested);
  const uint32_t cpu = current_cpu();
  Pin pin(cpu);
  REQUIRE(pin.ok());
  SECTION("outer accepted") {
    Setup s(Staging::off, "seq == 2");
    g_nested_seq.store(2);
    int fired = 0;
    REQUIRE(emit_sample(s.inst, 1, 1, {EmitStep::built_direct, &fired}) == EmitResult::kept);
    const auto recs = drain_cpu(s.inst, cpu);
    REQUIRE(recs.size() == 2);
    CHECK(recs[0].header().common_type == Sample::desc().id());  // reserved first
    CHECK(recs[1].header().common_type == Nested::desc().id());
    CHECK(recs[0].ts <= recs[1].ts);
  }
  SECTION("outer rejected") {
    Setup s(Staging::off, "seq == 2");
    g_nested_seq.store(2);
    int fired = 0;
    REQUIRE(emit_sample(s.inst, 5, 1, {EmitStep::built_direct, &fired}) == EmitResult::discarded);
    const auto recs = drain_cpu(s.inst, cpu);
    REQUIRE(recs.size() == 1);
    CHECK(recs[0].header().common_type == Nested::desc().id());
    // Not the last record any more when discarded: padding, not reclaimed.
    CHECK(sum_discarded(s.inst, &buffers::CpuStats::discarded) == 1);
    CHECK(sum_discarded(s.inst, &buffers::CpuStats::reclaimed) == 0);
  }
}

TEST_CASE("ordering: a thread that migrates between claim and commit releases its own slot",
          "[core][ordering][concurrency]") {
  // Two CPUs this thread may run on.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  sched_getaffinity(0, sizeof allowed, &allowed);
  std::vector<uint32_t> cpus;
  for (uint32_t c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) TP_SKIP("needs two CPUs in the affinity mask");
  const uint32_t from = cpus[0], to = cpus[1];
  for (Staging st : {Staging::per_cpu, Staging::per_thread}) {
    INFO("staging " << to_string(st));
    Pin pin(from);
    REQUIRE(pin.ok());
    REQUIRE(current_cpu() == from);
    Instance inst(small_options(st));
    inst.enable(Sample::desc());
    REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
    struct Migrate {
      uint32_t to;
      void operator()(EmitStep s) const {
        if (s != EmitStep::built_staged) return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(to, &one);
        sched_setaffinity(0, sizeof one, &one);  // moves us to `to` before it returns
      }
    };
    auto fill = [](std::span<std::byte> rec) noexcept {
      Sample::write_fields(rec.data(), 1, 7, "moved");
    };
    REQUIRE(tracepipe::testing::emit_fill(inst, Sample::desc(), Sample::fixed_size, fill,
                                          Migrate{to}) == EmitResult::kept);
    REQUIRE(current_cpu() == to);
    // The record entered the ring of the CPU we ran on at copy time.
    CHECK(drain_cpu(inst, from).empty());
    const auto moved = drain_cpu(inst, to);
    REQUIRE(moved.size() == 1);
    CHECK(moved[0].at<uint32_t>(12) == 7);
    // The slot claimed (on `from`) is free again.
    if (st == Staging::per_cpu) {
      CHECK_FALSE(
          tracepipe::detail::InstanceAccess::stager(inst).cpu_slots().busy_for_testing(from));
      CHECK_FALSE(tracepipe::detail::InstanceAccess::stager(inst).cpu_slots().busy_for_testing(to));
      // And it can be claimed again, by a thread on `from`.
      Pin back(from);
      REQUIRE(back.ok());
      auto again = tracepipe::detail::InstanceAccess::stager(inst).cpu_slots().try_claim_local(8);
      CHECK(static_cast<bool>(again));
      CHECK(again.cpu() == from);
      buffers::TempBuffer::release(again);
    } else {
      CHECK_FALSE(buffers::PerThreadTempBuffer::busy_for_testing());
    }
  }
}

namespace {

std::atomic<uint32_t> g_signal_seq{0};
void emit_nested_counted(int) {
  SignalScope in_handler;  // marks events from here as hardirq even outside another emit
  Instance* inst = g_inst.load();
  if (inst == nullptr) return;
  const uint32_t seq = g_signal_seq.fetch_add(1) + 1;
  Nested::emit(*inst, seq);
}

}  // namespace

TEST_CASE(
    "ordering: concurrent writers and signal handlers — per-CPU time order, nothing lost or "
    "duplicated",
    "[core][ordering][concurrency]") {
  for (Staging st : {Staging::per_cpu, Staging::per_thread, Staging::adaptive, Staging::off}) {
    INFO("staging " << to_string(st));
    SignalHandler h(emit_nested_counted);
    InstanceOptions o = small_options(st, BufferMode::drop_newest);
    o.buffer_size_kb = 4096;  // nothing is lost: exact accounting
    Instance inst(o);
    inst.enable(Sample::desc());
    inst.enable(Nested::desc());
    REQUIRE(inst.set_filter(Sample::desc(), "value & 1").ok());
    REQUIRE(inst.set_filter(Nested::desc(), "seq != 0").ok());
    g_inst.store(&inst);
    g_signal_seq.store(0);
    const uint64_t drops_before = unregistered_drops();
    constexpr uint32_t kThreads = 3, kPerThread = 6000;
    std::atomic<int> running{0}, started{0};
    std::vector<pthread_t> ids(kThreads);
    std::vector<std::thread> writers;
    for (uint32_t t = 0; t < kThreads; ++t) {
      writers.emplace_back([&, t] {
        prepare_thread();
        ids[t] = pthread_self();
        running.fetch_add(1);
        started.fetch_add(1);
        for (uint32_t i = 0; i < kPerThread; ++i) Sample::emit(inst, i, (t << 24) | i, "");
        running.fetch_sub(1);
      });
    }
    // A signaller interrupts the writers while they emit.
    uint32_t sent = 0;
    while (started.load() < static_cast<int>(kThreads)) std::this_thread::yield();
    while (running.load() > 0 && sent < 300) {
      for (uint32_t t = 0; t < kThreads; ++t)
        if (running.load() > 0 && pthread_kill(ids[t], SIGUSR1) == 0) ++sent;
      std::this_thread::yield();
    }
    for (auto& w : writers) w.join();
    g_inst.store(nullptr);

    std::set<uint32_t> samples, nested;
    uint64_t total = 0;
    for (uint32_t c = 0; c < inst.cpus(); ++c) {
      uint64_t last_ts = 0;
      for (const Rec& r : drain_cpu(inst, c)) {
        ++total;
        REQUIRE(r.ts >= last_ts);  // per-CPU time stamps never go back
        last_ts = r.ts;
        if (r.header().common_type == Sample::desc().id()) {
          REQUIRE(samples.insert(r.at<uint32_t>(12)).second);  // no duplicate
          REQUIRE((r.at<uint32_t>(8) & 1) == 1);
        } else {
          REQUIRE(r.header().common_type == Nested::desc().id());
          REQUIRE(nested.insert(r.at<uint32_t>(8)).second);
          REQUIRE(r.header().common_flags == TraceFlag::hardirq);
        }
      }
    }
    // Every accepted sample is there exactly once; nothing lost.
    CHECK(samples.size() == kThreads * kPerThread / 2);
    for (uint32_t t = 0; t < kThreads; ++t)
      for (uint32_t i = 1; i < kPerThread; i += 2) REQUIRE(samples.count((t << 24) | i) == 1);
    const EventStats ss = inst.event_stats(Sample::desc());
    const EventStats ns = inst.event_stats(Nested::desc());
    CHECK(ss.kept == samples.size());
    CHECK(ss.discarded == kThreads * kPerThread / 2);
    CHECK(ss.lost == 0);
    CHECK(ns.kept == nested.size());
    // Every handler's event landed, except one that hit a thread already
    // tearing down its context (counted as an unregistered drop).
    CHECK(ns.kept + (unregistered_drops() - drops_before) == g_signal_seq.load());
    CHECK(total == samples.size() + nested.size());
    uint64_t accounted = 0;
    for (const auto& cs : inst.cpu_stats()) accounted += cs.accounted();
    CHECK(accounted == inst.ring_attempts());
  }
}

TEST_CASE("ordering: filter swaps under load — each record passed the old or the new program",
          "[core][ordering][concurrency]") {
  // drop_newest: when the buffer fills, later records are lost (counted),
  // which does not matter here; what matters is which records were kept.
  Instance inst(small_options(Staging::per_thread, BufferMode::drop_newest));
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value == 7").ok());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> emitted{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&] {
      for (uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        Sample::emit(inst, i % 16, i, "");
        emitted.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (int k = 0; k < 100; ++k) {
    // Let the writers run a little under each program.
    const uint64_t target = emitted.load() + 64;
    while (emitted.load() < target) std::this_thread::yield();
    REQUIRE(inst.set_filter(Sample::desc(), k % 2 ? "value == 7" : "value == 9").ok());
  }
  REQUIRE(inst.set_filter(Sample::desc(), "value == 9").ok());
  stop.store(true);
  for (auto& w : writers) w.join();
  auto m = buffers::merged_iterator(inst.ring());
  uint64_t n = 0;
  while (auto r = m.next()) {
    uint32_t v;
    std::memcpy(&v, r->payload.data() + 8, 4);
    ++n;
    REQUIRE((v == 7 || v == 9));  // a writer ran the old program or the new one, never a mix
  }
  CHECK(n > 0);
  // After the last swap only value 9 passes.
  drain(inst);
  for (uint32_t v = 0; v < 16; ++v) Sample::emit(inst, v, v, "");
  const auto recs = drain(inst);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].at<uint32_t>(8) == 9);
}
