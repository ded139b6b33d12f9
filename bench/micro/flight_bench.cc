// The flight recorder's cost per emit: the same emit into a ring in private
// memory and into a ring in a flight file (InstanceOptions::flight_recorder,
// a MAP_SHARED tmpfs mapping), as ratios from one run. The legs run
// interleaved in blocks of kBlock emits (as emit_paired_bench.cc), on a
// pinned thread, in overwrite mode (the ring wraps: every sub-buffer switch
// and recycle is included).
//
//   flight/paired/no_filter    private vs flight, unfiltered (reserve, build, commit)
//   flight/paired/staged       private vs flight, filtered and accepted (stage, filter, copy)
//
// Counters, per repetition: private_ns, flight_ns (median over rounds of ns
// per emit), flight-private_ns (median over rounds of the difference of the
// two blocks of a round) with _p25/_p75, and flight/private with _p25/_p75.
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tracepipe/bench/micro/emit_cases.h"
#include "tracepipe/core/instance/instance.h"

namespace {

using namespace tracepipe;
using bench::BenchEvent, bench::emit_bench;

constexpr uint32_t kBlock = 4096;

using bench::now_ns;

[[gnu::noinline]] uint64_t run_block(Instance& inst, uint32_t& seq) {
  uint32_t i = seq;
  const uint64_t t0 = now_ns();
  for (uint32_t k = 0; k < kBlock; ++k, ++i) {
    const EmitResult r = emit_bench<BenchEvent>(inst, 1, i);
    benchmark::DoNotOptimize(r);
  }
  const uint64_t t1 = now_ns();
  seq = i;
  return t1 - t0;
}

void flight_paired(benchmark::State& state, bool filtered) {
  const bench::PinToCurrentCpu pin;
  std::unique_ptr<Instance> legs[2];  // 0: private memory, 1: flight file
  for (int k = 0; k < 2; ++k) {
    InstanceOptions o;
    o.staging = Staging::per_thread;
    o.mode = BufferMode::overwrite;
    o.flight_recorder = k == 1;
    legs[k] = std::make_unique<Instance>(o);
    legs[k]->enable(BenchEvent::desc());
    if (filtered && !legs[k]->set_filter(BenchEvent::desc(), "value == 1").ok()) {
      state.SkipWithError("filter did not compile");
      return;
    }
  }
  prepare_thread();
  uint32_t seq[2] = {0, 0};
  for (int w = 0; w < 2; ++w)
    for (int k = 0; k < 2; ++k) (void)run_block(*legs[k], seq[k]);
  bench::two_leg_rounds(state, "private", "flight", [&](int k) {
    return static_cast<double>(run_block(*legs[k], seq[k])) / kBlock;
  });
}

const int registered = [] {
  benchmark::RegisterBenchmark("flight/paired/no_filter", [](benchmark::State& s) {
    flight_paired(s, false);
  })->MinTime(0.5);
  benchmark::RegisterBenchmark("flight/paired/staged", [](benchmark::State& s) {
    flight_paired(s, true);
  })->MinTime(0.5);
  return 0;
}();

}  // namespace
