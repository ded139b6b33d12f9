// What overwrite mode costs per emit against drop-newest, as a difference
// measured in one run: the same emit into an overwrite ring and into a
// drop-newest ring, interleaved in blocks of kBlock emits on a pinned thread
// (as emit_paired_bench.cc), the legs' order alternating every round.
//
//   buffer_mode/paired/no_filter      unfiltered: reserve, build, commit
//   buffer_mode/paired/direct_commit  filtered and accepted, no staging:
//                                     reserve, build, filter, commit
//
// The overwrite ring runs full, as a flight recorder does: every sub-buffer
// switch also recycles the oldest sub-buffer (walk + zero, ring_buffer.h
// S4). The drop-newest ring is drained by a consuming reader between its
// blocks, untimed (as core_bench.cc's drop-newest cases), so it always has
// room: its switches claim sub-buffers the reader freed. The difference is
// therefore the recycling that overwrite does on the writer's side and
// drop-newest leaves to the reader.
//
// Counters, per repetition: overwrite_ns, drop_newest_ns (median over rounds
// of ns per emit), overwrite-drop_newest_ns (median over rounds of the
// difference of the two blocks of a round) with _p25/_p75, and
// overwrite/drop_newest with _p25/_p75.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tracepipe/bench/micro/emit_cases.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/instance/instance.h"

namespace {

using namespace tracepipe;
using bench::BenchEvent, bench::emit_bench;

// 4096 records of 80 bytes (64-byte event + 16-byte header) = 320 KiB: a
// quarter of the default 1408 KiB ring, so the drop-newest leg never fills
// within a block.
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

[[gnu::noinline]] void drain(Instance& inst) {
  for (uint32_t c = 0; c < inst.cpus(); ++c) {
    buffers::ConsumingReader reader(inst.ring(), c);
    while (reader.next()) {
    }
  }
}

void mode_paired(benchmark::State& state, bool filtered) {
  const bench::PinToCurrentCpu pin;
  std::unique_ptr<Instance> legs[2];  // 0: drop-newest, 1: overwrite
  for (int k = 0; k < 2; ++k) {
    InstanceOptions o;
    o.staging = filtered ? Staging::off : Staging::per_thread;
    o.mode = k == 0 ? BufferMode::drop_newest : BufferMode::overwrite;
    legs[k] = std::make_unique<Instance>(o);
    legs[k]->enable(BenchEvent::desc());
    if (filtered && !legs[k]->set_filter(BenchEvent::desc(), "value == 1").ok()) {
      state.SkipWithError("filter did not compile");
      return;
    }
  }
  prepare_thread();
  uint32_t seq[2] = {0, 0};
  // Warm-up: wrap the overwrite ring once (1408 KiB / 320 KiB per block), so
  // that every timed block recycles.
  for (int w = 0; w < 6; ++w) {
    (void)run_block(*legs[0], seq[0]);
    drain(*legs[0]);
    (void)run_block(*legs[1], seq[1]);
  }
  bench::two_leg_rounds(state, "drop_newest", "overwrite", [&](int k) {
    const double ns = static_cast<double>(run_block(*legs[k], seq[k])) / kBlock;
    if (k == 0) drain(*legs[0]);
    return ns;
  });
  if (legs[0]->event_stats(BenchEvent::desc()).lost != 0)
    state.SkipWithError("the drop-newest leg lost records: its ring filled within a block");
}

const int registered = [] {
  benchmark::RegisterBenchmark("buffer_mode/paired/no_filter", [](benchmark::State& s) {
    mode_paired(s, false);
  })->MinTime(0.5);
  benchmark::RegisterBenchmark("buffer_mode/paired/direct_commit", [](benchmark::State& s) {
    mode_paired(s, true);
  })->MinTime(0.5);
  return 0;
}();

}  // namespace
