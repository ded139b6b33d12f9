// Ring buffer and temp buffer micro-benchmarks (one binary: ratios between
// modes come from the same run). Each thread is pinned to a CPU.
//
//   BM_ReserveCommit<mode, clock, bytes>   reserve + copy payload + commit, ns per record
//   BM_DiscardReclaim<mode>                reserve + discard of the last record (space reclaimed)
//   BM_DiscardPadding<mode>                reserve a, reserve b, commit b, discard a (padding)
//   BM_TempClaimRelease<per-cpu|per-thread> staging claim + release
//   BM_TempClaimReleaseLocal                 the per-CPU claim by rseq (cpu_local)
//
// Clocks: Null (no clock read), Tsc (rdtsc inlined as a Clock policy),
// TscFn (rdtsc behind the default FunctionClock pointer), Mono
// (clock_gettime(CLOCK_MONOTONIC) through the pointer).
// Drop-newest fills up without a reader: when a write is refused the buffer
// is drained by a reader with the timer paused (once per buffer), so only
// the write path is timed. Overwrite recycles in the write path (timed).
// Targets: 64-byte reserve+commit, no clock <= 5 ns; with a TSC
// clock <= 15 ns; overwrite and drop-newest within 5%.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <x86intrin.h>

#include <cstring>
#include <memory>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/buffers/temp_buffer.h"

namespace {

using namespace tracepipe::buffers;

void pin_to_cpu(int thread_index) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int n = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  CPU_SET(thread_index % n, &set);
  sched_setaffinity(0, sizeof set, &set);
}

struct TscClock {
  [[gnu::always_inline]] uint64_t operator()() const noexcept { return __rdtsc(); }
};
uint64_t rdtsc_fn() noexcept { return __rdtsc(); }

template <class C>
C make_clock() {
  return C{};
}
struct TscFn : FunctionClock {
  TscFn() : FunctionClock(&rdtsc_fn) {}
};
struct Mono : FunctionClock {
  Mono() : FunctionClock(&monotonic_clock_ns) {}
};

constexpr RingBufferConfig kConfig{.cpus =
                                       2};  // kernel defaults: 1408 KiB per CPU, 4 KiB sub-buffers

// Writers: Any = any_cpu (locked 16-byte CAS), Local = cpu_local (rseq).
constexpr auto Any = Writers::any_cpu;
constexpr auto Local = Writers::cpu_local;

// One buffer per instantiation, shared by the threads of a run (each thread
// writes its own CPU, or CPU 0 when `shared`).
template <OverflowMode M, class Clock, Writers W = Any>
RingBuffer<M, Clock, NoHooks, W>& buffer() {
  static auto* rb = new RingBuffer<M, Clock, NoHooks, W>(kConfig, Clock{});
  return *rb;
}

[[gnu::noinline]] void drain(benchmark::State& state, RingBufferBase& rb, uint32_t cpu) {
  state.PauseTiming();
  ConsumingReader reader(rb, cpu);
  while (reader.next()) {
  }
  state.ResumeTiming();
}

template <OverflowMode M, class Clock, uint32_t Len, Writers W = Any, bool Shared = false>
void BM_ReserveCommit(benchmark::State& state) {
  pin_to_cpu(state.thread_index());
  auto& rb = buffer<M, Clock, W>();
  const uint32_t cpu = Shared ? 0 : static_cast<uint32_t>(state.thread_index()) % rb.cpus();
  alignas(64) std::byte src[Len];
  std::memset(src, 0x5a, Len);
  for (auto _ : state) {
    Reservation r = rb.reserve(cpu, Len);
    if (!r) [[unlikely]] {
      if constexpr (M == OverflowMode::drop_newest) drain(state, rb, r.cpu());
      continue;
    }
    std::memcpy(r.payload().data(), src, Len);
    rb.commit(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * Len);
}

template <OverflowMode M, Writers W = Any>
void BM_DiscardReclaim(benchmark::State& state) {
  pin_to_cpu(state.thread_index());
  auto& rb = buffer<M, NullClock, W>();
  const uint32_t cpu = static_cast<uint32_t>(state.thread_index()) % rb.cpus();
  for (auto _ : state) {
    Reservation r = rb.reserve(cpu, 64);
    benchmark::DoNotOptimize(r);
    rb.discard(r);
  }
  state.SetItemsProcessed(state.iterations());
}

template <OverflowMode M, Writers W = Any>
void BM_DiscardPadding(benchmark::State& state) {
  pin_to_cpu(state.thread_index());
  auto& rb = buffer<M, NullClock, W>();
  const uint32_t cpu = static_cast<uint32_t>(state.thread_index()) % rb.cpus();
  for (auto _ : state) {
    Reservation a = rb.reserve(cpu, 64);
    Reservation b = rb.reserve(cpu, 64);
    if (!a || !b) [[unlikely]] {
      rb.discard(b);
      rb.discard(a);
      if constexpr (M == OverflowMode::drop_newest) drain(state, rb, a.cpu());
      continue;
    }
    rb.commit(b);
    rb.discard(a);  // not last: padding
  }
  state.SetItemsProcessed(state.iterations());
}

template <class TB>
void BM_TempClaimRelease(benchmark::State& state) {
  pin_to_cpu(state.thread_index());
  static auto* tb = [] {
    if constexpr (std::is_same_v<TB, TempBuffer>)
      return new TempBuffer(TempBufferConfig{.cpus = 2});
    else
      return new PerThreadTempBuffer();
  }();
  const uint32_t cpu = static_cast<uint32_t>(state.thread_index()) % 2;
  for (auto _ : state) {
    StagedRecord h = tb->try_claim(cpu, 64);
    benchmark::DoNotOptimize(h);
    TB::release(h);
  }
  state.SetItemsProcessed(state.iterations());
}

// The per-CPU claim the core uses when the process has rseq: a restartable
// sequence on the caller's CPU (Writers::cpu_local), no locked instruction.
void BM_TempClaimReleaseLocal(benchmark::State& state) {
  if (!detail::rseq_usable()) {
    state.SkipWithError("rseq or membarrier RSEQ unavailable");
    return;
  }
  pin_to_cpu(state.thread_index());
  static auto* tb = new TempBuffer(TempBufferConfig{
      .cpus = static_cast<uint32_t>(get_nprocs_conf()), .writers = Writers::cpu_local});
  for (auto _ : state) {
    StagedRecord h = tb->try_claim_local(64);
    benchmark::DoNotOptimize(h);
    TempBuffer::release(h);
  }
  state.SetItemsProcessed(state.iterations());
}

constexpr auto OW = OverflowMode::overwrite;
constexpr auto DN = OverflowMode::drop_newest;

#define TP_RC(mode, clock, len) BENCHMARK_TEMPLATE(BM_ReserveCommit, mode, clock, len)->MinTime(0.2)
#define TP_RCL(mode, clock, len) \
  BENCHMARK_TEMPLATE(BM_ReserveCommit, mode, clock, len, Local)->MinTime(0.2)

TP_RC(OW, NullClock, 16);
TP_RC(DN, NullClock, 16);
TP_RC(OW, NullClock, 64);
TP_RC(DN, NullClock, 64);
TP_RC(OW, NullClock, 256);
TP_RC(DN, NullClock, 256);
TP_RC(OW, TscClock, 16);
TP_RC(DN, TscClock, 16);
TP_RC(OW, TscClock, 64);
TP_RC(DN, TscClock, 64);
TP_RC(OW, TscClock, 256);
TP_RC(DN, TscClock, 256);
TP_RC(OW, TscFn, 64);
TP_RC(DN, TscFn, 64);
TP_RC(OW, Mono, 64);
TP_RC(DN, Mono, 64);
// Two threads, each on its own CPU buffer; then two threads on one buffer.
TP_RC(OW, NullClock, 64)->Threads(2);
TP_RC(DN, NullClock, 64)->Threads(2);
TP_RC(OW, TscClock, 64)->Threads(2);
TP_RC(DN, TscClock, 64)->Threads(2);
BENCHMARK_TEMPLATE(BM_ReserveCommit, OW, TscClock, 64, Any, true)->MinTime(0.2)->Threads(2);
BENCHMARK_TEMPLATE(BM_ReserveCommit, DN, TscClock, 64, Any, true)->MinTime(0.2)->Threads(2);
// cpu_local writers (rseq, no locked instruction): what the core's instances use.
TP_RCL(OW, NullClock, 16);
TP_RCL(DN, NullClock, 16);
TP_RCL(OW, NullClock, 64);
TP_RCL(DN, NullClock, 64);
TP_RCL(OW, NullClock, 256);
TP_RCL(DN, NullClock, 256);
TP_RCL(OW, TscClock, 64);
TP_RCL(DN, TscClock, 64);
TP_RCL(OW, NullClock, 64)->Threads(2);
TP_RCL(DN, NullClock, 64)->Threads(2);
TP_RCL(OW, TscClock, 64)->Threads(2);
TP_RCL(DN, TscClock, 64)->Threads(2);
BENCHMARK_TEMPLATE(BM_DiscardReclaim, OW, Local)->MinTime(0.2)->Threads(1);
BENCHMARK_TEMPLATE(BM_DiscardReclaim, DN, Local)->MinTime(0.2)->Threads(1);
BENCHMARK_TEMPLATE(BM_DiscardPadding, OW, Local)->MinTime(0.2)->Threads(1);
BENCHMARK_TEMPLATE(BM_DiscardPadding, DN, Local)->MinTime(0.2)->Threads(1);

BENCHMARK_TEMPLATE(BM_DiscardReclaim, OW)->MinTime(0.2)->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_DiscardReclaim, DN)->MinTime(0.2)->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_DiscardPadding, OW)->MinTime(0.2)->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_DiscardPadding, DN)->MinTime(0.2)->Threads(1)->Threads(2);

BENCHMARK_TEMPLATE(BM_TempClaimRelease, TempBuffer)->MinTime(0.2)->Threads(1)->Threads(2);
BENCHMARK_TEMPLATE(BM_TempClaimRelease, PerThreadTempBuffer)->MinTime(0.2)->Threads(1)->Threads(2);
BENCHMARK(BM_TempClaimReleaseLocal)->MinTime(0.2)->Threads(1)->Threads(2);

}  // namespace
