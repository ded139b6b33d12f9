#pragma once
// The write path's view of an event's triggers: an interface the triggers
// library (core/triggers) implements, so that the instance knows nothing of
// trigger kinds. An event with triggers has EventState::kTriggered set; the
// emit then stages its record (as for a filter) and calls the hook on the
// built record, kept or discarded alike, before the filter decides, and the
// post-commit half after the record is committed or dropped.
//
// Mirrors kernel/trace/trace_events_trigger.c: event_triggers_call (the
// conditions and the immediate actions) and event_triggers_post_call (the
// actions that run after the commit: traceon, traceoff, snapshot,
// stacktrace).
#include <cstddef>
#include <cstdint>
#include <span>

namespace tracepipe {
struct ThreadContext;
}

namespace tracepipe::detail {

/// What the emit knows when it calls the triggers.
struct TriggerCall {
  std::span<const std::byte>
      record;                   ///< the built record (staged or reserved), common header included
  const ThreadContext* thread;  ///< the emitting thread (comm, tid, stack range)
  uint32_t cpu;                 ///< the CPU as the filter sees it (valid unless cpu_unknown)
  bool cpu_unknown;             ///< cpu_local writers: read current_cpu() if needed
};

/// The triggers of one (instance, event). Both calls run on the write path:
/// no allocation, lock or system call. Freed only after a grace period
/// once unpublished (Instance::set_triggers), like a filter program.
class TriggerHook {
 public:
  virtual ~TriggerHook() = default;
  /// Tests every trigger's `if FILTER` on the record and runs the immediate
  /// actions (hist, enable_event, disable_event). Returns the set of
  /// triggers whose post-commit action is due (bit i = trigger i).
  virtual uint32_t call(const TriggerCall& c) noexcept = 0;
  /// Runs the post-commit actions of the triggers in `fired`.
  virtual void post_call(uint32_t fired, const TriggerCall& c) noexcept = 0;
};

/// What call() left for post_call(): the list it ran (a list swapped in
/// meanwhile is not the one the bits index) and the due triggers.
struct TriggersFired {
  TriggerHook* hook = nullptr;
  uint32_t mask = 0;
};

}  // namespace tracepipe::detail
