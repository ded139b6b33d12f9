#pragma once
// The emit benchmarks' event and call site, shared by bench/micro/core_bench.cc (one
// case per benchmark) and bench/micro/emit_paired_bench.cc (cases interleaved in
// short blocks). Internal to the microbench.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"

namespace tracepipe::bench {

using BenchEvent =
    EventDecl<"tpbench", "sample", Int<"value", uint32_t>, Int<"seq", uint32_t>, Chars<"pad", 48>>;
static_assert(BenchEvent::fixed_size == 64);
// Same size, but the filtered field is a u64: the filter's 8-byte load then
// reads exactly one earlier store (store-to-load forwarding works), where
// for the u32 `value` it spans the common header and the field, written by
// two stores just before (forwarding fails, a stall). See docs/instance.md.
using BenchEvent64 = EventDecl<"tpbench", "sample64", Int<"value", uint64_t>, Chars<"pad", 48>>;
static_assert(BenchEvent64::fixed_size == 64);

// Inlined into the timed loop, as E::emit is at a user's call site (it is
// always_inline); an out-of-line wrapper would add a call, six register
// saves and their restores that no event site pays.
template <class E>
[[gnu::always_inline]] inline EmitResult emit_bench(Instance& inst, uint32_t value, uint32_t seq) {
  if constexpr (E::field_count == 3)
    return E::emit(inst, value, seq, "bench");
  else
    return E::emit(inst, value, "bench");
}

// What the filter sees, fixed at compile time so that the timed loop holds
// only the emit: a run-time choice of pattern inside the loop costs time
// per iteration (register pressure around the inlined emit), which is
// harness, not emit. The value still reaches the record through the emit's
// stores and the filter's load (the program is compiled at run time).
enum class Accept { never, always, half, most };

template <Accept A>
[[gnu::always_inline]] inline uint32_t value_of(uint32_t n) {
  if constexpr (A == Accept::never)
    return 0;
  else if constexpr (A == Accept::always)
    return 1;
  else if constexpr (A == Accept::half)
    return n & 1;  // every other event accepted
  else
    return (n & 31) != 0 ? 1 : 0;  // 31 of 32 (96.9%) accepted
}

/// The q-quantile (0..1, nearest rank) of paired-block samples; 0 when empty.
/// The one helper the paired benchmarks (emit, flight, triggers) share.
inline double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

/// CLOCK_MONOTONIC in ns: the block timer of the paired benchmarks (a vDSO
/// read, paid twice per block of thousands of emits).
[[gnu::always_inline]] inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

/// state.counters[name] = the median of `v`, and name_p25 / name_p75 its
/// quartiles: how every paired benchmark reports a per-round difference.
inline void quartile_counters(benchmark::State& state, const std::string& name,
                              const std::vector<double>& v) {
  state.counters[name] = quantile(v, 0.5);
  state.counters[name + "_p25"] = quantile(v, 0.25);
  state.counters[name + "_p75"] = quantile(v, 0.75);
}

/// Pins the calling thread to the CPU it runs on for its lifetime and
/// restores its affinity after: the two-leg paired benchmarks' setup.
class PinToCurrentCpu {
 public:
  PinToCurrentCpu() {
    sched_getaffinity(0, sizeof old_, &old_);
    cpu_set_t one;
    CPU_ZERO(&one);
    const int cpu = sched_getcpu();
    CPU_SET(cpu < 0 ? 0 : cpu, &one);
    sched_setaffinity(0, sizeof one, &one);
  }
  ~PinToCurrentCpu() { sched_setaffinity(0, sizeof old_, &old_); }
  PinToCurrentCpu(const PinToCurrentCpu&) = delete;
  PinToCurrentCpu& operator=(const PinToCurrentCpu&) = delete;

 private:
  cpu_set_t old_;
};

/// Two legs in interleaved rounds, the order alternating every round: one
/// benchmark iteration is one round. `block(k)` runs one block of leg k and
/// returns its ns per emit. Reports <b>_ns and <a>_ns (medians over rounds),
/// <b>-<a>_ns and <b>/<a> (per-round difference and ratio, with quartiles)
/// for leg 0 named `a` and leg 1 named `b`.
template <class Block>
void two_leg_rounds(benchmark::State& state, const std::string& a, const std::string& b,
                    Block&& block) {
  std::vector<double> ns[2], diff, ratio;
  size_t round = 0;
  for (auto _ : state) {
    double t[2];
    for (int j = 0; j < 2; ++j) {
      const int k = (static_cast<int>(round) + j) % 2;
      t[k] = block(k);
    }
    ns[0].push_back(t[0]);
    ns[1].push_back(t[1]);
    diff.push_back(t[1] - t[0]);
    ratio.push_back(t[1] / t[0]);
    ++round;
  }
  state.counters[a + "_ns"] = quantile(ns[0], 0.5);
  state.counters[b + "_ns"] = quantile(ns[1], 0.5);
  quartile_counters(state, b + "-" + a + "_ns", diff);
  quartile_counters(state, b + "/" + a, ratio);
  state.counters["rounds"] = static_cast<double>(round);
}

}  // namespace tracepipe::bench
