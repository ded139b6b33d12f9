// What the tracepoint-style calls cost against the direct emit, and a
// rejected glob against a rejected integer compare, measured as paired
// blocks (the method of emit_paired_bench.cc: the legs run interleaved in
// blocks of kBlock emits, their order rotating every round; each figure is
// the median over rounds of a difference of two blocks microseconds apart).
//
//   trace/paired   every leg: per_thread staging, a filter that rejects every
//                  emit (the staged discard), its own event type enabled in
//                  its own instance (so a leg's trace() reaches one instance)
//     emit_int     EventDecl::emit(instance, ...), filter "value == 1"
//     macro_int    TRACEPIPE_TRACE(Decl, ...),      filter "value == 1"
//     fn_int       EventDecl::trace(...),            filter "value == 1"
//     emit_glob    EventDecl::emit,                  filter pad ~ "zz*"
//     macro_glob   TRACEPIPE_TRACE,                  filter pad ~ "zz*"
//   trace/commit   every leg commits the same 64-byte event: per_thread
//                  staging, an overwrite ring of its own (never full)
//     emit_none, macro_none, fn_none     no filter (the unfiltered lane)
//     emit_acc, macro_acc, fn_acc        filter "value == 0": accepts every
//                                        emit (staged, then committed)
//     emit_gacc, macro_gacc              filter pad ~ "ben*": a string match
//                                        that accepts every emit
// Counters: <leg>_ns (median ns per emit); macro_vs_emit_ns, fn_vs_emit_ns
// (same filter, call style differs), glob_vs_int_ns, macro_glob_vs_int_ns
// (same call, filter differs), and trace/commit's <call>_vs_emit_<filter>_ns
// (filter none, acc or gacc):
// medians of per-round differences, with _p25 / _p75.
#include <benchmark/benchmark.h>
#include <time.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "tracepipe/bench/micro/emit_cases.h"
#include "tracepipe/core/instance/event_decl.h"

namespace {

using namespace tracepipe;

template <FixedString Name>
using TraceEvent =
    EventDecl<"tpbench", Name, Int<"value", uint32_t>, Int<"seq", uint32_t>, Chars<"pad", 48>>;
using EmitInt = TraceEvent<"trace_emit_int">;
using MacroInt = TraceEvent<"trace_macro_int">;
using FnInt = TraceEvent<"trace_fn_int">;
using EmitGlob = TraceEvent<"trace_emit_glob">;
using MacroGlob = TraceEvent<"trace_macro_glob">;
using EmitNone = TraceEvent<"trace_emit_none">;
using MacroNone = TraceEvent<"trace_macro_none">;
using FnNone = TraceEvent<"trace_fn_none">;
using EmitAcc = TraceEvent<"trace_emit_acc">;
using MacroAcc = TraceEvent<"trace_macro_acc">;
using FnAcc = TraceEvent<"trace_fn_acc">;
using EmitGacc = TraceEvent<"trace_emit_gacc">;
using MacroGacc = TraceEvent<"trace_macro_gacc">;

constexpr uint32_t kBlock = 4096;
enum class Call { emit, macro, fn };

using bench::now_ns;

template <class E, Call C>
[[gnu::noinline]] uint64_t run_block(Instance& inst, uint32_t& seq) {
  uint32_t i = seq;
  const uint64_t t0 = now_ns();
  for (uint32_t k = 0; k < kBlock; ++k, ++i) {
    if constexpr (C == Call::emit) {
      const EmitResult r = E::emit(inst, 0u, i, "bench");
      benchmark::DoNotOptimize(r);
    } else if constexpr (C == Call::macro) {
      TRACEPIPE_TRACE(E, 0u, i, "bench");
    } else {
      E::trace(0u, i, "bench");
    }
    benchmark::ClobberMemory();
  }
  const uint64_t t1 = now_ns();
  seq = i;
  return t1 - t0;
}

using bench::quantile;

struct Leg {
  const char* name;
  const EventDesc* desc;
  const char* filter;  // nullptr: none
  uint64_t (*run)(Instance&, uint32_t&);
  std::unique_ptr<Instance> inst;
  uint32_t seq = 0;
  std::vector<double> ns;
};

template <class E, Call C>
Leg leg(const char* name, const char* filter) {
  return {name, &E::desc(), filter, run_block<E, C>, nullptr, 0, {}};
}

// Each leg its own instance (per_thread staging, overwrite ring), its event
// enabled there with the leg's filter; then the thread registers and each
// leg runs two untimed blocks (the ring's pages touched, caches warm).
bool set_up(benchmark::State& state, std::vector<Leg>& legs) {
  for (Leg& l : legs) {
    InstanceOptions o;
    o.staging = Staging::per_thread;
    o.mode = BufferMode::overwrite;
    l.inst = std::make_unique<Instance>(o);
    l.inst->enable(*l.desc);
    if (l.filter != nullptr && !l.inst->set_filter(*l.desc, l.filter).ok()) {
      state.SkipWithError("filter rejected");
      return false;
    }
  }
  prepare_thread();
  for (Leg& l : legs)
    for (int w = 0; w < 2; ++w) (void)l.run(*l.inst, l.seq);
  return true;
}

// The timed rounds: every leg one block per round, the order rotating.
size_t run_rounds(benchmark::State& state, std::vector<Leg>& legs) {
  size_t round = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < legs.size(); ++k) {
      Leg& l = legs[(round + k) % legs.size()];
      l.ns.push_back(static_cast<double>(l.run(*l.inst, l.seq)) / kBlock);
    }
    ++round;
  }
  return round;
}

void diff_counters(benchmark::State& state, const std::vector<Leg>& legs, size_t rounds,
                   const char* name, size_t a, size_t b) {
  std::vector<double> d(rounds);
  for (size_t r = 0; r < rounds; ++r) d[r] = legs[a].ns[r] - legs[b].ns[r];
  bench::quartile_counters(state, name, d);
}

void paired(benchmark::State& state) {
  std::vector<Leg> legs;
  legs.push_back(leg<EmitInt, Call::emit>("emit_int", "value == 1"));
  legs.push_back(leg<MacroInt, Call::macro>("macro_int", "value == 1"));
  legs.push_back(leg<FnInt, Call::fn>("fn_int", "value == 1"));
  legs.push_back(leg<EmitGlob, Call::emit>("emit_glob", "pad ~ \"zz*\""));
  legs.push_back(leg<MacroGlob, Call::macro>("macro_glob", "pad ~ \"zz*\""));
  if (!set_up(state, legs)) return;
  const size_t round = run_rounds(state, legs);
  for (const Leg& l : legs) {
    state.counters[std::string(l.name) + "_ns"] = quantile(l.ns, 0.5);
    if (l.inst->event_stats(*l.desc).kept != 0) state.SkipWithError("a filter kept an event");
  }
  auto diff = [&](const char* name, size_t a, size_t b) {
    diff_counters(state, legs, round, name, a, b);
  };
  diff("macro_vs_emit_ns", 1, 0);
  diff("fn_vs_emit_ns", 2, 0);
  diff("glob_vs_int_ns", 3, 0);
  diff("macro_glob_vs_int_ns", 4, 1);
  state.counters["rounds"] = static_cast<double>(round);
}

// The committed emit by call style: TRACEPIPE_TRACE and EventDecl::trace
// against EventDecl::emit, each leg committing every emit.
void commit(benchmark::State& state) {
  std::vector<Leg> legs;
  legs.push_back(leg<EmitNone, Call::emit>("emit_none", nullptr));
  legs.push_back(leg<MacroNone, Call::macro>("macro_none", nullptr));
  legs.push_back(leg<FnNone, Call::fn>("fn_none", nullptr));
  legs.push_back(leg<EmitAcc, Call::emit>("emit_acc", "value == 0"));
  legs.push_back(leg<MacroAcc, Call::macro>("macro_acc", "value == 0"));
  legs.push_back(leg<FnAcc, Call::fn>("fn_acc", "value == 0"));
  legs.push_back(leg<EmitGacc, Call::emit>("emit_gacc", "pad ~ \"ben*\""));
  legs.push_back(leg<MacroGacc, Call::macro>("macro_gacc", "pad ~ \"ben*\""));
  if (!set_up(state, legs)) return;
  const size_t round = run_rounds(state, legs);
  for (const Leg& l : legs) {
    state.counters[std::string(l.name) + "_ns"] = quantile(l.ns, 0.5);
    if (l.inst->event_stats(*l.desc).kept == 0) state.SkipWithError("a leg kept nothing");
    if (l.inst->event_stats(*l.desc).discarded != 0) state.SkipWithError("a filter rejected");
  }
  diff_counters(state, legs, round, "macro_vs_emit_none_ns", 1, 0);
  diff_counters(state, legs, round, "fn_vs_emit_none_ns", 2, 0);
  diff_counters(state, legs, round, "macro_vs_emit_acc_ns", 4, 3);
  diff_counters(state, legs, round, "fn_vs_emit_acc_ns", 5, 3);
  diff_counters(state, legs, round, "macro_vs_emit_gacc_ns", 7, 6);
  state.counters["rounds"] = static_cast<double>(round);
}

const int registered = (benchmark::RegisterBenchmark("trace/paired", paired)->MinTime(0.5),
                        benchmark::RegisterBenchmark("trace/commit", commit)->MinTime(0.5), 0);

}  // namespace
