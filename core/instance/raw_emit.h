#pragma once
// Records built elsewhere (a trace.dat's, a flight file's), emitted into an
// instance as they are: replay's entry points, kept off Instance so that an
// application's emit is Instance::emit_fill, EventDecl::emit / trace and
// TRACEPIPE_TRACE only.
//
//   #include <tracepipe/core/instance/raw_emit.h>
//   tracepipe::RawEmit::emit(inst, record, cpu);        // the instance's clock stamps it
//   tracepipe::RawEmit::emit_at(inst, record, cpu, ts); // the recorded stamp (external_time)
#include <cstdint>
#include <span>

#include "tracepipe/core/instance/instance.h"

namespace tracepipe {

/// Emits a record built elsewhere, exactly as the kernel lays it out (common
/// header included and kept as is), on CPU `cpu` (the recorded one, for
/// replay), through the same stage → filter → commit path as an emit. The
/// filter's CPU fields see `cpu` as given, even at or above the buffer
/// count. With cpu_local writers (WriterMode) the record goes to the buffer
/// of the CPU the caller runs on; set `cpus` or `external_time` (or writers =
/// any_cpu) to place records by `cpu`: buffer `cpu % buffers`. Records
/// shorter than 8 bytes or of an unknown ID are refused (EmitResult::lost,
/// counted in Instance::raw_refused()). Thread safety and cost: those of an
/// emit (any thread, lock-free, no allocation once the thread is registered).
struct RawEmit {
  /// The event is looked up by the record's common_type.
  static EmitResult emit(Instance& instance, std::span<const std::byte> record,
                         uint32_t cpu) noexcept {
    detail::NoEmitHooks hooks;
    return instance.emit_raw(record, cpu, hooks);
  }
  /// Same, with the event already known (record[0..1] should equal its ID).
  static EmitResult emit(Instance& instance, const EventDesc& event,
                         std::span<const std::byte> record, uint32_t cpu) noexcept {
    detail::NoEmitHooks hooks;
    return instance.emit_raw(event, record, cpu, hooks);
  }
  /// emit() with the record's original time stamp (ns of the recorded
  /// clock), for instances built with InstanceOptions::external_time
  /// (otherwise `ts` is ignored and the instance's clock stamps the record).
  static EmitResult emit_at(Instance& instance, std::span<const std::byte> record, uint32_t cpu,
                            uint64_t ts) noexcept {
    detail::tl_external_ts = ts;
    return emit(instance, record, cpu);
  }
};

}  // namespace tracepipe
