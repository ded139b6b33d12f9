#pragma once
// Event triggers and hist triggers: the kernel's events/SYS/EVENT/trigger
// and events/SYS/EVENT/hist files on top of an Instance.
//
//   set_trigger(inst, ev, "traceoff:5 if prev_pid == 1")   // echo ... >> trigger
//   set_trigger(inst, ev, "!traceoff")                     // echo '!traceoff' >> trigger
//   trigger_file(inst, ev)                                  // cat trigger
//   hist_file(inst, ev)                                     // cat hist
//
// ══ Where triggers run ═══════════════════════════════════════════════════════
//
//   emit ─▶ stage (kTriggered stages like kFiltered) ─▶ build record
//            ─▶ triggers: each `if FILTER` on the record; hist and
//               enable_event / disable_event act now, the others are noted
//            ─▶ event filter: commit or discard (soft-disabled: discard)
//            ─▶ post: traceon, traceoff, snapshot, stacktrace
//
// Every emit of an enabled event reaches its triggers, kept or discarded,
// soft-disabled included, as in the kernel (a trigger's filter is tested on
// the staged record, so a rejected trigger costs no commit). Adding a trigger
// to a disabled event enables it soft-disabled (the kernel's soft mode):
// its triggers run and nothing is recorded; removing the last trigger
// disables it again.
//
// ══ Commands (Documentation/trace/events.rst, section 6) ══════════════════════
//   traceon[:count] [if FILTER]       resume the ring (tracing_on)
//   traceoff[:count] [if FILTER]      pause the ring (tracing_off)
//   snapshot[:count] [if FILTER]      swap the ring with the snapshot spare (snapshot.h)
//   stacktrace[:count] [if FILTER]    record the call chain (ftrace:kernel_stack)
//   enable_event:SYS:EVENT[:count] [if FILTER]   clear SYS:EVENT's soft-disable
//   disable_event:SYS:EVENT[:count] [if FILTER]  set it
//   hist:keys=...[:vals=...][:sort=...][:size=N][:name=N][:pause][:cont][:clear] [if FILTER]
//   !COMMAND...                        removes the matching trigger
// One trigger per kind and event (traceon and traceoff are one kind; one
// enable/disable_event per target; hists with different keys may coexist),
// else EEXIST, as the kernel. A count decrements exactly once per action,
// under any number of concurrent writers (a CAS loop).
//
// Thread-safety: the functions here are the control plane: any thread,
// serialised by a mutex, never from a signal handler or inside an emit.
// Mirrors kernel/trace/trace_events_trigger.c and trace_events_hist.c.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "tracepipe/core/instance/instance.h"

namespace tracepipe {

/// A refused trigger command: the errno the kernel's write returns and,
/// where the kernel logs one, its error_log entry (message and caret).
struct TriggerError {
  int err = 0;           ///< EINVAL, EEXIST, ENOENT, ERANGE, ...
  std::string message;   ///< error_log message ("" when the kernel logs none)
  std::string location;  ///< "event filter parse error" or "hist:SYS:EVENT"
  std::string command;   ///< error_log's Command: text (the filter, or the hist spec)
  int pos = -1;          ///< caret position in `command`, -1 if none
  /// error_log's three lines (without the time stamp), or the errno's
  /// strerror text when the kernel logs nothing.
  std::string render() const;
};

/// Result of set_trigger().
class [[nodiscard]] TriggerStatus {
 public:
  TriggerStatus() = default;
  explicit TriggerStatus(TriggerError e) : error_(std::move(e)) {}
  bool ok() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  const TriggerError& error() const { return *error_; }  ///< precondition: !ok()
  std::string render() const { return error_ ? error_->render() : std::string(); }

 private:
  std::optional<TriggerError> error_;
};

/// Writes one trigger command, as `echo CMD >> events/SYS/EVENT/trigger`
/// (several lines: each in turn, stopping at the first error). Removal with
/// a leading '!' of a trigger that is not there succeeds, as in the kernel.
TriggerStatus set_trigger(Instance& instance, const EventDesc& event, std::string_view command);
/// Same, with the event named "SYS:EVENT" in the instance's registry
/// (an unknown name is ENOENT).
TriggerStatus set_trigger(Instance& instance, std::string_view event, std::string_view command);

/// Removes every trigger of the event (as `!` for each line of the file).
void clear_triggers(Instance& instance, const EventDesc& event);

/// The trigger file: one line per trigger, newest first ("traceoff:unlimited",
/// "stacktrace:count=2 if prev_pid > 10", "hist:keys=...:size=2048 [active]"),
/// or the "# Available triggers:" header when there is none.
std::string trigger_file(const Instance& instance, const EventDesc& event);

/// How hist output resolves .execname, .sym and .sym-offset keys.
struct HistNames {
  /// pid -> comm; default: the instance's cmdlines() ("<...>" if unknown).
  std::function<std::string(int32_t pid)> comm;
  /// address -> "symbol" (.sym) or "symbol+0xoff/0xsize" (.sym-offset);
  /// nullopt prints the address in hex, as %ps does for an unknown one.
  std::function<std::optional<std::string>(uint64_t addr, bool with_offset)> sym;
};

/// The hist file: every hist trigger of the event, oldest first, each as
/// the kernel prints it (header with the trigger info line, one line per
/// entry in sort order, then Totals: Hits, Entries, Dropped). Empty when the
/// event has no hist trigger. Reads the maps while writers update them
/// (each counter is read atomically; an entry being inserted may be missed).
std::string hist_file(const Instance& instance, const EventDesc& event,
                      const HistNames& names = {});

/// Counters of an event's triggers, for tests and tools.
struct TriggerCounts {
  uint64_t snapshots = 0;    ///< snapshots taken (swaps of the live ring with the spare)
  uint64_t stacktraces = 0;  ///< kernel_stack records written (kept or lost)
};
TriggerCounts trigger_counts(const Instance& instance, const EventDesc& event);

/// Applies the `trigger` keys of a config section's [events.*] tables, in
/// file order (Instance::apply calls it once this library is linked).
/// Throws ConfigError naming the file, line and key, with the kernel's error.
void apply_triggers(Instance& instance, const InstanceConfig& config);

}  // namespace tracepipe

// The synthetic_events and snapshot files belong to the same library
// (tracepipe::triggers): one include gives all three.
#include "tracepipe/core/triggers/snapshot.h"   // IWYU pragma: export
#include "tracepipe/core/triggers/synthetic.h"  // IWYU pragma: export
