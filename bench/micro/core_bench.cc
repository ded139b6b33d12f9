// Emit cost of the fast path, per case, against the emit targets:
//   staged discard of a 64-byte event with one numeric predicate <= 5 ns;
//   commit <= 20 ns; staged commit <= 1.15 x unfiltered commit (adaptive
//   <= 1.05 x); adaptive within 5% of the better of staged and direct at
//   every acceptance rate.
// All cases run in this one binary and one process, so their ratios come
// from the same run. Ring: overwrite mode (never full), kernel-default size
// (1408 KiB per CPU, 4 KiB sub-buffers), trace clock `local`.
//
//   tracepipe_microbench --benchmark_filter='^emit/'
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>

#include "tracepipe/bench/micro/emit_cases.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/buffers/rseq.h"
#include "tracepipe/core/clock/trace_clock.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/filters/filter.h"

namespace {

using namespace tracepipe;

using bench::Accept, bench::BenchEvent, bench::BenchEvent64, bench::emit_bench, bench::value_of;

// Drop-newest cases: when the ring is full, it is drained by a consuming
// reader with the timer paused (as in bench/micro/ring_buffer_bench.cc), so only
// the write path is timed and the overwrite ring's recycling is left out.
[[gnu::noinline]] void drain(benchmark::State& state, Instance& inst) {
  state.PauseTiming();
  for (uint32_t c = 0; c < inst.cpus(); ++c) {
    buffers::ConsumingReader reader(inst.ring(), c);
    while (reader.next()) {
    }
  }
  state.ResumeTiming();
}

template <class E, Accept A, BufferMode Mode>
void run(benchmark::State& state, Staging staging, bool filtered, bool soft) {
  using BenchEvent = E;
  InstanceOptions o;
  o.staging = staging;
  o.mode = Mode;
  Instance inst(o);
  inst.enable(BenchEvent::desc());
  if (filtered && !inst.set_filter(BenchEvent::desc(), "value == 1").ok()) {
    state.SkipWithError("filter did not compile");
    return;
  }
  if (soft) inst.set_soft_disabled(BenchEvent::desc(), true);
  prepare_thread();
  uint32_t i = 0;
  for (int w = 0; w < 1000; ++w) emit_bench<E>(inst, value_of<A>(i), i), ++i;  // warm up
  for (auto _ : state) {
    const EmitResult r = emit_bench<E>(inst, value_of<A>(i), i);
    benchmark::DoNotOptimize(r);
    if constexpr (Mode == BufferMode::drop_newest)
      if (r == EmitResult::lost) [[unlikely]]
        drain(state, inst);
    ++i;
  }
  const EventStats s = inst.event_stats(BenchEvent::desc());
  const double n = static_cast<double>(s.emitted());
  state.counters["kept%"] = n > 0 ? 100.0 * static_cast<double>(s.kept) / n : 0;
  state.counters["staged%"] = n > 0 ? 100.0 * static_cast<double>(s.staged) / n : 0;
  state.counters["lost"] = static_cast<double>(s.lost);
}

// The harness alone: the loop, the argument and DoNotOptimize around an
// emit that does nothing (subtract it to compare with other tracers' figures).
void loop_only(benchmark::State& state) {
  uint32_t i = 0;
  for (auto _ : state) {
    uint32_t v = value_of<Accept::half>(i);
    benchmark::DoNotOptimize(v);
    ++i;
  }
}

// The floor: the parts an emit is made of, joined by hand with none of the
// emit's own work (no event state, thread context, counters or policy).
// `commit` reserves in the same ring as an instance (overwrite, cpu_local,
// `local` read inline), writes the same 64 bytes in the same stores and
// commits; `filter_commit` runs the same compiled program on the record
// before committing (what any filtered direct commit must add);
// `stage_filter_copy_commit` builds it in a buffer, filters, then reserves,
// copies and commits (what any staged commit must add, less the slot's
// claim and release). Their ratios bound what the emit's ratios can reach.
// One read of the `local` trace clock as the ring reads it (inline rdtsc,
// scaled to ns): every committed event pays it once, so it says how much of
// the commit target a host leaves to the rest (rdtsc's cost varies by
// host, by a factor of two between the hosts in docs/measurements.md).
void clock_floor(benchmark::State& state) {
  const buffers::FunctionClock clock = tracepipe::detail::ring_clock(ClockId::local);
  for (auto _ : state) {
    uint64_t t = clock();
    benchmark::DoNotOptimize(t);
  }
}

enum class Floor { commit, filter_commit, stage_filter_copy_commit, hand_commit };

template <Floor F>
void floor_case(benchmark::State& state) {
  using Ring = buffers::RingBuffer<buffers::OverflowMode::overwrite, buffers::FunctionClock,
                                   buffers::NoHooks, buffers::Writers::cpu_local>;
  if (!buffers::detail::rseq_usable()) {
    state.SkipWithError("no rseq: the instance's ring would not be cpu_local");
    return;
  }
  buffers::RingBufferConfig rc;
  rc.cpus = Instance(InstanceOptions{}).cpus();
  Ring ring(rc, tracepipe::detail::ring_clock(ClockId::local));
  const filters::CompileResult cr =
      filters::compile("value == 1", BenchEvent::desc().filter_fields());
  if (!cr.ok()) {
    state.SkipWithError("filter did not compile");
    return;
  }
  const filters::Program& prog = *cr.program();
  const uint64_t hdr = uint64_t{BenchEvent::desc().id()} | (uint64_t{4242} << 32);  // type, pid
  alignas(64) std::byte staged[64];
  // The event's stores: header word, value, seq, then the 48-byte array
  // ("bench" and zeros), as EventDecl's writer makes them.
  const auto build = [&](std::byte* p, uint32_t value, uint32_t seq)
                         TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
                           std::memcpy(p, &hdr, 8);
                           std::memcpy(p + 8, &value, 4);
                           std::memcpy(p + 12, &seq, 4);
                           std::memset(p + 16, 0, 48);
                           std::memcpy(p + 16, "bench", 5);
                         };
  // As the emit: "value == 1" reads no context, so none is built.
  const auto no_context = [] { return filters::EvalContext{}; };
  uint32_t i = 0;
  for (auto _ : state) {
    bool kept = false;
    if constexpr (F == Floor::stage_filter_copy_commit) {
      build(staged, 1, i);
      if (prog.match_lazy({staged, 64}, no_context)) {
        const buffers::Reservation r = ring.reserve(0, 64);
        if (r) {
          std::memcpy(r.payload().data(), staged, 64);
          ring.commit(r);
          kept = true;
        }
      }
    } else {
      const buffers::Reservation r = ring.reserve(0, 64);
      if (r) {
        build(r.payload().data(), 1, i);
        uint32_t v = 0;
        if constexpr (F == Floor::hand_commit) {
          asm volatile("" ::: "memory");  // the value comes from the record, as the filter's does
          std::memcpy(&v, r.payload().data() + 8, 4);
        }
        if (F == Floor::commit ||
            (F == Floor::hand_commit ? v == 1 : prog.match_lazy(r.payload(), no_context))) {
          ring.commit(r);
          kept = true;
        } else {
          ring.discard(r);
        }
      }
    }
    benchmark::DoNotOptimize(kept);
    benchmark::DoNotOptimize(staged);
    ++i;
  }
}

template <class E>
using RunFn = void (*)(benchmark::State&, Staging, bool, bool);

template <class E, BufferMode M>
RunFn<E> pick(Accept a) {
  switch (a) {
    case Accept::never:
      return &run<E, Accept::never, M>;
    case Accept::always:
      return &run<E, Accept::always, M>;
    case Accept::half:
      return &run<E, Accept::half, M>;
    default:
      return &run<E, Accept::most, M>;
  }
}

void register_all() {
  struct Case {
    std::string name;
    Staging staging;
    bool filtered;
    Accept accept;
    bool soft = false;
    bool u64 = false;
    BufferMode mode = BufferMode::overwrite;
  };
  const Case cases[] = {
      {"emit/no_filter", Staging::per_thread, false, Accept::always},
      {"emit/staged_discard/per_thread", Staging::per_thread, true, Accept::never},
      {"emit/staged_discard/per_cpu", Staging::per_cpu, true, Accept::never},
      {"emit/staged_commit/per_thread", Staging::per_thread, true, Accept::always},
      {"emit/staged_commit/per_cpu", Staging::per_cpu, true, Accept::always},
      {"emit/staged_half/per_thread", Staging::per_thread, true, Accept::half},
      {"emit/direct_discard", Staging::off, true, Accept::never},
      {"emit/direct_commit", Staging::off, true, Accept::always},
      {"emit/direct_half", Staging::off, true, Accept::half},
      {"emit/adaptive/accept_0", Staging::adaptive, true, Accept::never},
      {"emit/adaptive/accept_50", Staging::adaptive, true, Accept::half},
      {"emit/adaptive/accept_100", Staging::adaptive, true, Accept::always},
      // 31 of 32 accepted: adaptive goes direct and stays (its average stays
      // above 0.9), so each reject catches up the accepts before it.
      {"emit/adaptive/accept_97", Staging::adaptive, true, Accept::most},
      {"emit/direct_97", Staging::off, true, Accept::most},
      {"emit/staged_97/per_thread", Staging::per_thread, true, Accept::most},
      // No filter to run: the cost of staging itself (claim, build, release).
      {"emit/soft_disabled/per_thread", Staging::per_thread, false, Accept::never, true},
      // The filtered field is a u64 (no store-forwarding stall in the filter).
      {"emit/staged_discard/per_thread/u64_field", Staging::per_thread, true, Accept::never, false,
       true},
      {"emit/staged_commit/per_thread/u64_field", Staging::per_thread, true, Accept::always, false,
       true},
      {"emit/no_filter/u64_field", Staging::per_thread, false, Accept::always, false, true},
      // Drop-newest rings (drained untimed): commits without the overwrite
      // ring's recycling of the oldest sub-buffer.
      {"emit/no_filter/drop_newest", Staging::per_thread, false, Accept::always, false, false,
       BufferMode::drop_newest},
      {"emit/staged_commit/per_thread/drop_newest", Staging::per_thread, true, Accept::always,
       false, false, BufferMode::drop_newest},
      {"emit/direct_commit/drop_newest", Staging::off, true, Accept::always, false, false,
       BufferMode::drop_newest},
  };
  for (const Case& c : cases) {
    benchmark::RegisterBenchmark(c.name.c_str(), [c](benchmark::State& st) {
      const bool dn = c.mode == BufferMode::drop_newest;
      if (c.u64)
        (dn ? pick<BenchEvent64, BufferMode::drop_newest>(c.accept)
            : pick<BenchEvent64, BufferMode::overwrite>(c.accept))(st, c.staging, c.filtered,
                                                                   c.soft);
      else
        (dn ? pick<BenchEvent, BufferMode::drop_newest>(c.accept)
            : pick<BenchEvent, BufferMode::overwrite>(c.accept))(st, c.staging, c.filtered, c.soft);
    })->MinTime(0.2);
  }
  benchmark::RegisterBenchmark("emit/loop_only", loop_only)->MinTime(0.2);
  benchmark::RegisterBenchmark("emit/floor/clock", clock_floor)->MinTime(0.2);
  benchmark::RegisterBenchmark("emit/floor/commit", floor_case<Floor::commit>)->MinTime(0.2);
  benchmark::RegisterBenchmark("emit/floor/filter_commit", floor_case<Floor::filter_commit>)
      ->MinTime(0.2);
  benchmark::RegisterBenchmark("emit/floor/hand_commit", floor_case<Floor::hand_commit>)
      ->MinTime(0.2);
  benchmark::RegisterBenchmark("emit/floor/stage_filter_copy_commit",
                               floor_case<Floor::stage_filter_copy_commit>)
      ->MinTime(0.2);
}

const int registered = (register_all(), 0);

}  // namespace
