#pragma once
// The seam between the bench workload and a tracing engine.
//
// The workload (workload.h) is a template over a type that models
// `EmitTarget`: at each emit point it calls
//
//   tracer.emit<SysEnterRecord>(EventKind::sys_enter, [&](SysEnterRecord& r) { r.id = 1; ... });
//
// and the tracer decides everything else: whether the event is enabled,
// where the record is built (staging slot or ring buffer), the common fields,
// the filter, commit or discard. The fill callback writes the event fields
// only, in place, as the kernel's TP_fast_assign writes into the reserved
// entry; it must not touch `common` (the tracer fills it).
//
// A tracer also counts what it did, per thread-free shard, so a run can
// report events emitted, accepted (committed) and rejected (discarded).
// The counts are statistics of the run, read after all workload threads
// have joined.
#include <concepts>
#include <cstdint>

#include "tracepipe/bench/engine/records.h"

namespace tracepipe::bench {

/// What a tracer did during one run. `emitted` counts emit() calls on
/// enabled events; accepted + rejected + lost == emitted when the tracer
/// sees every outcome (lost = dropped by a full or paused buffer).
struct EmitCounts {
  uint64_t emitted = 0;
  uint64_t accepted = 0;
  uint64_t rejected = 0;
  uint64_t lost = 0;
};

/// Something the workload can emit records into. `emit` may be called from
/// any workload thread concurrently; it must not allocate, lock or make a
/// system call when tracing is on (the engine's contract).
template <class T>
concept EmitTarget = requires(T& t) {
  t.template emit<SysExitRecord>(EventKind::sys_exit, [](SysExitRecord&) {});
};

/// A tracer that records nothing and costs nothing: the workload compiled
/// without any emit point. Used by the tests and by `--engine none`.
struct NullTracer {
  template <class Record, class Fill>
  void emit(EventKind, Fill&&) noexcept {}
};
static_assert(EmitTarget<NullTracer>);

}  // namespace tracepipe::bench
