// The emit ratio targets measured as ratios: the cases of one target run in
// the same benchmark, interleaved in blocks of kBlock emits, and each ratio
// is the median over rounds of the ratio of two blocks a few microseconds
// apart. The separate cases of core_bench.cc run a fifth of a second each,
// so their ratios also hold whatever the host did between them; on the
// 2-vCPU VMs here that moved single cases by 10-25% within one run, while
// the ratio of two blocks of one round moves by a few percent.
//
//   emit/paired/commit    no_filter, staged_commit, adaptive_100, direct_commit
//   emit/paired/accept_0  adaptive_0, staged_discard, direct_discard
//   emit/paired/accept_50 adaptive_50, staged_half, direct_half
//   emit/paired/accept_97 adaptive_97, staged_97, direct_97
//
// Each leg is its own Instance (ring, event state, adaptive average), set up
// as the single case of the same name is (bench/micro/core_bench.cc), and its
// blocks are its own inlined loop of emits, timed with CLOCK_MONOTONIC (vDSO;
// two reads against a block of tens of microseconds). The legs' order
// rotates every round. Counters, per repetition (the library then takes the
// median over repetitions):
//   <leg>_ns                  median over rounds of the leg's ns per emit
//   <a>/<b>                   median over rounds of a's block / b's block
//   <a>/<b>_p25, _p75         the quartiles of that ratio (its spread)
//   adaptive_N/better         adaptive's block over the block, in the same
//                             round, of whichever of staged and direct has
//                             the lower median in this repetition (picking
//                             per round would bias the ratio up where the
//                             two policies cost about the same)
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tracepipe/bench/micro/emit_cases.h"
#include "tracepipe/core/instance/instance.h"

namespace {

using namespace tracepipe;
using bench::Accept, bench::BenchEvent, bench::emit_bench, bench::value_of;

// Emits per block: enough that the two clock reads around a block are
// noise, few enough that a preemption spoils one block of a leg, not a round.
constexpr uint32_t kBlock = 4096;
constexpr int kWarmupBlocks = 2;  // untimed blocks per leg before the first round

using bench::now_ns;

// One leg's block: kBlock emits, the same inlined call site as core_bench.cc's
// timed loop. noinline so that each leg's loop is laid out on its own.
template <Accept A>
[[gnu::noinline]] uint64_t run_block(Instance& inst, uint32_t& seq) {
  uint32_t i = seq;
  const uint64_t t0 = now_ns();
  for (uint32_t k = 0; k < kBlock; ++k, ++i) {
    const EmitResult r = emit_bench<BenchEvent>(inst, value_of<A>(i), i);
    benchmark::DoNotOptimize(r);
  }
  const uint64_t t1 = now_ns();
  seq = i;
  return t1 - t0;
}

struct LegSpec {
  const char* name;
  Staging staging;
  bool filtered;
  Accept accept;
};

struct Leg {
  LegSpec spec;
  std::unique_ptr<Instance> inst;
  uint64_t (*block)(Instance&, uint32_t&) = nullptr;
  uint32_t seq = 0;
  std::vector<double> ns;  // per round, ns per emit
};

uint64_t (*block_for(Accept a))(Instance&, uint32_t&) {
  switch (a) {
    case Accept::never:
      return &run_block<Accept::never>;
    case Accept::always:
      return &run_block<Accept::always>;
    case Accept::half:
      return &run_block<Accept::half>;
    default:
      return &run_block<Accept::most>;
  }
}

using bench::quantile;

// A ratio's three counters: median and quartiles over rounds of num[r] / den[r].
void ratio_counters(benchmark::State& state, const std::string& name,
                    const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> r(num.size());
  for (size_t k = 0; k < num.size(); ++k) r[k] = num[k] / den[k];
  bench::quartile_counters(state, name, r);
}

// specs: the adaptive leg, its staged and its direct counterparts, and, with
// `unfiltered`, a last no-filter leg.
void paired(benchmark::State& state, std::vector<LegSpec> specs, bool unfiltered) {
  std::vector<Leg> legs;
  for (const LegSpec& s : specs) {
    InstanceOptions o;
    o.staging = s.staging;
    o.mode = BufferMode::overwrite;
    Leg l{s, std::make_unique<Instance>(o), block_for(s.accept), 0, {}};
    l.inst->enable(BenchEvent::desc());
    if (s.filtered && !l.inst->set_filter(BenchEvent::desc(), "value == 1").ok()) {
      state.SkipWithError("filter did not compile");
      return;
    }
    legs.push_back(std::move(l));
  }
  prepare_thread();
  for (Leg& l : legs)
    for (int w = 0; w < kWarmupBlocks; ++w) (void)l.block(*l.inst, l.seq);
  size_t round = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < legs.size(); ++k) {
      Leg& l = legs[(round + k) % legs.size()];
      l.ns.push_back(static_cast<double>(l.block(*l.inst, l.seq)) / kBlock);
    }
    ++round;
  }
  for (const Leg& l : legs) state.counters[std::string(l.spec.name) + "_ns"] = quantile(l.ns, 0.5);
  const Leg& a = legs[0];
  const Leg& staged = legs[1];
  const Leg& direct = legs[2];
  const Leg& better = quantile(staged.ns, 0.5) <= quantile(direct.ns, 0.5) ? staged : direct;
  ratio_counters(state, std::string(a.spec.name) + "/better", a.ns, better.ns);
  if (unfiltered) {
    const Leg& nf = legs.back();
    ratio_counters(state, std::string(staged.spec.name) + "/no_filter", staged.ns, nf.ns);
    ratio_counters(state, std::string(a.spec.name) + "/no_filter", a.ns, nf.ns);
  }
  state.counters["rounds"] = static_cast<double>(round);
}

// One group per target: the adaptive leg first, then its staged and direct
// counterparts (the three of a rate), plus the unfiltered leg for commit.
struct Group {
  const char* name;
  Accept accept;
  const char* adaptive;
  const char* staged;
  const char* direct;
  bool with_unfiltered;
};

void register_paired() {
  static constexpr Group kGroups[] = {
      {"emit/paired/commit", Accept::always, "adaptive_100", "staged_commit", "direct_commit",
       true},
      {"emit/paired/accept_0", Accept::never, "adaptive_0", "staged_discard", "direct_discard",
       false},
      {"emit/paired/accept_50", Accept::half, "adaptive_50", "staged_half", "direct_half", false},
      {"emit/paired/accept_97", Accept::most, "adaptive_97", "staged_97", "direct_97", false},
  };
  // Each benchmark iteration is one round (every leg one block), so the
  // library's iteration count is the number of rounds.
  for (const Group& g : kGroups) {
    benchmark::RegisterBenchmark(g.name, [&g](benchmark::State& st) {
      std::vector<LegSpec> legs = {{g.adaptive, Staging::adaptive, true, g.accept},
                                   {g.staged, Staging::per_thread, true, g.accept},
                                   {g.direct, Staging::off, true, g.accept}};
      if (g.with_unfiltered) legs.push_back({"no_filter", Staging::per_thread, false, g.accept});
      paired(st, std::move(legs), g.with_unfiltered);
    })->MinTime(0.5);
  }
}

const int registered = (register_paired(), 0);

}  // namespace
