// What a trigger adds to an emit, measured as paired blocks (the method of
// emit_paired_bench.cc: the legs of one benchmark run interleaved in blocks
// of kBlock emits, their order rotating every round, and each figure is the
// median over rounds of a difference of two blocks a few microseconds apart).
//
//   triggers/paired   every leg: per_thread staging, the filter "value == 1",
//                     which rejects every emit (the staged discard)
//     base            no trigger
//     count_filter    traceoff:1000 if seq == 4294967295 (a count-limited
//                     trigger whose filter rejects)
//     hist_1key       hist:keys=key                     (256 keys)
//     hist_3key       hist:keys=key,k2,k3               (256 keys)
//     hist_1key_var   hist:keys=key:v=seq               (one variable from a field)
//     hist_1key_ts    hist:keys=key:t0=common_timestamp (one variable: a clock read)
//
//   triggers/onmatch_pair   a start and an end event per iteration (256 keys),
//                     both staged and discarded by their filter
//     base            no trigger
//     onmatch         start: hist:keys=key:t0=common_timestamp; end:
//                     hist:keys=key:d=common_timestamp-$t0:onmatch(...).
//                     trace(synthetic,$d,key); the synthetic event counted by
//                     hist:keys=key:vals=lat (per matched pair)
// Counters: <leg>_ns (median ns per emit), <leg>_added_ns (median over
// rounds of leg minus base, per emit) with _p25 / _p75.
//
//   triggers/stacktrace   every leg: no filter, every emit committed
//     base            no trigger
//     stack           stacktrace (unlimited): a kernel_stack record per emit
//     stack_deep      the same, emitted 16 noinline calls deeper
// Counters: stack_added_ns (the cost of one stack: trigger, unwind, record),
// frames (frames recorded by `stack`), per_frame_ns (stack_deep minus
// stack, per extra frame).
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tracepipe/bench/micro/emit_cases.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/synthetic.h"
#include "tracepipe/core/triggers/triggers.h"

namespace {

using namespace tracepipe;

using TrigEvent =
    EventDecl<"tpbench", "trig", Int<"value", uint32_t>, Int<"seq", uint32_t>, Int<"key", uint32_t>,
              Int<"k2", uint32_t>, Int<"k3", uint32_t>, Chars<"pad", 36>>;
static_assert(TrigEvent::fixed_size == 64);

constexpr uint32_t kBlock = 4096;

using bench::now_ns;

[[gnu::noinline]] uint64_t run_block(Instance& inst, uint32_t& seq) {
  uint32_t i = seq;
  const uint64_t t0 = now_ns();
  for (uint32_t k = 0; k < kBlock; ++k, ++i) {
    const EmitResult r = TrigEvent::emit(inst, 0u, i, i & 255u, (i >> 3) & 3u, i & 1u, "bench");
    benchmark::DoNotOptimize(r);
  }
  const uint64_t t1 = now_ns();
  seq = i;
  return t1 - t0;
}

using bench::quantile;

struct Leg {
  const char* name;
  const char* trigger;  // nullptr: none
  std::unique_ptr<Instance> inst;
  uint32_t seq = 0;
  std::vector<double> ns;
};

void paired(benchmark::State& state) {
  std::vector<Leg> legs;
  for (auto [name, trig] : {std::pair<const char*, const char*>{"base", nullptr},
                            {"count_filter", "traceoff:1000 if seq == 4294967295"},
                            {"hist_1key", "hist:keys=key"},
                            {"hist_3key", "hist:keys=key,k2,k3"},
                            {"hist_1key_var", "hist:keys=key:v=seq"},
                            {"hist_1key_ts", "hist:keys=key:t0=common_timestamp"}}) {
    InstanceOptions o;
    o.staging = Staging::per_thread;
    o.mode = BufferMode::overwrite;
    Leg l{name, trig, std::make_unique<Instance>(o), 0, {}};
    l.inst->enable(TrigEvent::desc());
    if (!l.inst->set_filter(TrigEvent::desc(), "value == 1").ok() ||
        (trig != nullptr && !set_trigger(*l.inst, TrigEvent::desc(), trig).ok())) {
      state.SkipWithError("setup failed");
      return;
    }
    legs.push_back(std::move(l));
  }
  prepare_thread();
  for (Leg& l : legs)
    for (int w = 0; w < 2; ++w) (void)run_block(*l.inst, l.seq);
  size_t round = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < legs.size(); ++k) {
      Leg& l = legs[(round + k) % legs.size()];
      l.ns.push_back(static_cast<double>(run_block(*l.inst, l.seq)) / kBlock);
    }
    ++round;
  }
  for (const Leg& l : legs) state.counters[std::string(l.name) + "_ns"] = quantile(l.ns, 0.5);
  for (size_t k = 1; k < legs.size(); ++k) {
    std::vector<double> d(round);
    for (size_t r = 0; r < round; ++r) d[r] = legs[k].ns[r] - legs[0].ns[r];
    bench::quartile_counters(state, std::string(legs[k].name) + "_added_ns", d);
  }
  state.counters["rounds"] = static_cast<double>(round);
}

constexpr uint32_t kStackBlock = 256;
constexpr int kExtraFrames = 16;

[[gnu::noinline]] uint64_t stack_block(Instance& inst, uint32_t& seq) {
  uint32_t i = seq;
  const uint64_t t0 = now_ns();
  for (uint32_t k = 0; k < kStackBlock; ++k, ++i) {
    const EmitResult r = TrigEvent::emit(inst, 0u, i, 0u, 0u, 0u, "bench");
    benchmark::DoNotOptimize(r);
  }
  const uint64_t t1 = now_ns();
  seq = i;
  return t1 - t0;
}
// stack_block, `depth` noinline calls deeper (no tail call: the result is used).
[[gnu::noinline]] uint64_t deeper(Instance& inst, uint32_t& seq, int depth) {
  if (depth == 0) return stack_block(inst, seq);
  const uint64_t t = deeper(inst, seq, depth - 1);
  benchmark::DoNotOptimize(depth);
  return t;
}

void stacktrace(benchmark::State& state) {
  struct StackLeg {
    const char* name;
    bool trigger;
    int depth;
    std::unique_ptr<Instance> inst;
    uint32_t seq = 0;
    std::vector<double> ns;
  };
  std::vector<StackLeg> legs;
  for (auto [name, trig, depth] : {std::tuple<const char*, bool, int>{"base", false, 0},
                                   {"stack", true, 0},
                                   {"stack_deep", true, kExtraFrames}}) {
    InstanceOptions o;
    o.mode = BufferMode::overwrite;
    StackLeg l{name, trig, depth, std::make_unique<Instance>(o), 0, {}};
    l.inst->enable(TrigEvent::desc());
    if (trig && !set_trigger(*l.inst, TrigEvent::desc(), "stacktrace").ok()) {
      state.SkipWithError("setup failed");
      return;
    }
    legs.push_back(std::move(l));
  }
  prepare_thread();
  for (StackLeg& l : legs)
    for (int w = 0; w < 2; ++w) (void)deeper(*l.inst, l.seq, l.depth);
  size_t round = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < legs.size(); ++k) {
      StackLeg& l = legs[(round + k) % legs.size()];
      l.ns.push_back(static_cast<double>(deeper(*l.inst, l.seq, l.depth)) / kStackBlock);
    }
    ++round;
  }
  std::vector<double> added(round), per_frame(round);
  for (size_t r = 0; r < round; ++r) {
    added[r] = legs[1].ns[r] - legs[0].ns[r];
    per_frame[r] = (legs[2].ns[r] - legs[1].ns[r]) / kExtraFrames;
  }
  bench::quartile_counters(state, "stack_added_ns", added);
  bench::quartile_counters(state, "per_frame_ns", per_frame);
  // Frames in the `stack` leg's last record.
  const EventDesc* ks = legs[1].inst->registry().find("ftrace", "kernel_stack");
  int32_t frames = 0;
  for (uint32_t cpu = 0; ks != nullptr && cpu < legs[1].inst->cpus(); ++cpu) {
    buffers::Iterator it(legs[1].inst->ring(), cpu);
    while (auto rec = it.next()) {
      uint16_t id;
      std::memcpy(&id, rec->payload.data(), 2);
      if (id == ks->id()) std::memcpy(&frames, rec->payload.data() + 8, 4);
    }
  }
  state.counters["frames"] = frames;
  state.counters["rounds"] = static_cast<double>(round);
}

using EndEvent = EventDecl<"tpbench", "trig_end", Int<"value", uint32_t>, Int<"key", uint32_t>>;

[[gnu::noinline]] uint64_t run_pairs(Instance& inst, uint32_t& seq) {
  uint32_t i = seq;
  const uint64_t t0 = now_ns();
  for (uint32_t k = 0; k < kBlock; ++k, ++i) {
    EmitResult r = TrigEvent::emit(inst, 0u, i, i & 255u, 0u, 0u, "bench");
    benchmark::DoNotOptimize(r);
    r = EndEvent::emit(inst, 0u, i & 255u);
    benchmark::DoNotOptimize(r);
  }
  const uint64_t t1 = now_ns();
  seq = i;
  return t1 - t0;
}

void onmatch_pair(benchmark::State& state) {
  std::vector<Leg> legs;
  for (const char* name : {"base", "onmatch"}) {
    InstanceOptions o;
    o.staging = Staging::per_thread;
    o.mode = BufferMode::overwrite;
    Leg l{name, nullptr, std::make_unique<Instance>(o), 0, {}};
    Instance& inst = *l.inst;
    inst.enable(TrigEvent::desc());
    inst.enable(EndEvent::desc());
    bool ok = inst.set_filter(TrigEvent::desc(), "value == 1").ok() &&
              inst.set_filter(EndEvent::desc(), "value == 1").ok();
    if (ok && std::string(name) == "onmatch") {
      if (synthetic_event(inst, "tpbench_lat") == nullptr)
        ok = set_synthetic_event(inst, "tpbench_lat u64 lat; u32 key").ok();
      ok = ok && set_trigger(inst, TrigEvent::desc(), "hist:keys=key:t0=common_timestamp").ok() &&
           set_trigger(inst, EndEvent::desc(),
                       "hist:keys=key:d=common_timestamp-$t0:onmatch(tpbench.trig).trace(tpbench_"
                       "lat,$d,key)")
               .ok() &&
           set_trigger(inst, *synthetic_event(inst, "tpbench_lat"), "hist:keys=key:vals=lat").ok();
    }
    if (!ok) {
      state.SkipWithError("setup failed");
      return;
    }
    legs.push_back(std::move(l));
  }
  prepare_thread();
  for (Leg& l : legs)
    for (int w = 0; w < 2; ++w) (void)run_pairs(*l.inst, l.seq);
  size_t round = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < legs.size(); ++k) {
      Leg& l = legs[(round + k) % legs.size()];
      l.ns.push_back(static_cast<double>(run_pairs(*l.inst, l.seq)) / kBlock);
    }
    ++round;
  }
  for (const Leg& l : legs) state.counters[std::string(l.name) + "_pair_ns"] = quantile(l.ns, 0.5);
  std::vector<double> d(round);
  for (size_t r = 0; r < round; ++r) d[r] = legs[1].ns[r] - legs[0].ns[r];
  bench::quartile_counters(state, "onmatch_added_pair_ns", d);
  state.counters["rounds"] = static_cast<double>(round);
}

const int registered =
    (benchmark::RegisterBenchmark("triggers/paired", paired)->MinTime(0.5),
     benchmark::RegisterBenchmark("triggers/stacktrace", stacktrace)->MinTime(0.5),
     benchmark::RegisterBenchmark("triggers/onmatch_pair", onmatch_pair)->MinTime(0.5), 0);

}  // namespace
