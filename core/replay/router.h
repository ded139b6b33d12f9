#pragma once
// The [filter] stage of `tracepipe replay` (replay.h): where each recorded
// record goes, chosen by its common_type, and the hot loop that sends a
// batch of one CPU through the instance.
//
//   record ─ common_type ─▶ route
//     emit         RawEmit::emit_at(record, cpu, recorded ts): stage → filter →
//                  commit, the instance's own filter (or none) decides
//     replay_side  Program::match(record, recorded context), then RawEmit::emit into
//                  the event's unfiltered state (kept) or nothing (discarded)
//     skip         event not replayed (disabled, --only-filtered): counted only
//     unknown      no format with this ID: counted only
//
// Why replay_side exists: a filter that reads COMM (current->comm), a `char *`
// string (printk_formats) or needs the recording machine's kallsyms /
// nr_cpu_ids cannot be given that context through RawEmit::emit and
// Instance::set_filter today; the plan's program, compiled with the file's
// options, runs here instead. See docs/replay.md.
//
// Invariants: a Router is immutable after construction; feed() may run on
// several threads at once for different CPUs, each with its own counters.
// feed() allocates nothing, takes no lock and makes no system call (beyond
// what RawEmit::emit does, i.e. none once the thread is registered):
// tests/core/replay/replay_noalloc_test.cc counts it.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/replay/comm_timeline.h"
#include "tracepipe/core/replay/filter_plan.h"
#include "tracepipe/core/replay/replay.h"
#include "tracepipe/core/replay/symbols.h"
#include "tracepipe/core/tracedat/trace_symbols.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tracepipe::replay {

/// One recorded record on its way through the pipeline.
struct Rec {
  uint64_t ts;         ///< recorded time stamp (trace-clock units)
  const std::byte* p;  ///< payload in the file mapping (common_type first)
  uint32_t len;        ///< payload bytes
  EmitResult result;   ///< set by Router::feed (disabled = skipped or unknown)
  uint64_t seq = 0;    ///< index of the record in its CPU's stream (the COMM timeline's position)
};

/// Counters of one event on one CPU stream (one thread at a time).
struct Counter {
  uint64_t replayed = 0, kept = 0, discarded = 0, lost = 0, skipped = 0;
  uint64_t ticks = 0, samples = 0, cycles = 0;  ///< timing: records seen, timed, their TSC cycles
};

/// Timing samples every kTimingPeriod-th record of each event (its first
/// included); a sample over kPreemptedCycles (~20 us) means the thread was
/// preempted and is dropped (a page fault, ~1-2 us, still counts).
inline constexpr uint64_t kTimingPeriod = 16;  // power of two
inline constexpr uint64_t kPreemptedCycles = 50'000;

class Router {
 public:
  /// Enables, soft-disables and filters the plan's events in `inst` and
  /// builds the routes. `ncpu` is the recorded CPU count (the nr_cpu_ids the
  /// plan was compiled with), `trailing` the plan's dialect for a dangling
  /// "&&" / "||". `reader` must outlive the router.
  Router(const TraceDatReader& reader, Instance& inst, const std::vector<EventPlan>& plan,
         uint32_t ncpu, filters::TrailingOperator trailing = filters::TrailingOperator::reject);

  /// Counter slots feed() uses: one per registry index, plus unknown_slot().
  size_t counter_slots() const noexcept { return unknown_slot_ + 1; }
  uint32_t unknown_slot() const noexcept { return unknown_slot_; }
  /// How the event's filter runs (none for events without one).
  FilterRoute route(const EventDesc& event) const noexcept;

  /// Sends `recs` (records of `cpu`, in order) through the instance, sets
  /// each Rec::result and counts into counters[slot] (size counter_slots()).
  void feed(std::span<Rec> recs, uint32_t cpu, std::span<Counter> counters,
            bool timing) const noexcept;

 private:
  enum class Kind : uint8_t { unknown, skip, emit, replay_side };
  struct Route {
    Kind kind = Kind::unknown;
    bool needs_comm = false;
    uint32_t slot = 0;
    const EventDesc* desc = nullptr;
    const filters::Program* prog = nullptr;
    detail::EventState* state = nullptr;  ///< replay_side: the event's state (its triggers)
    CommSource comm;
  };
  template <bool kTiming>
  void feed_impl(std::span<Rec> recs, uint32_t cpu, Counter* counters) const noexcept;
  EmitResult replay_side(const Route& rt, std::span<const std::byte> rec,
                         const RecordPosition& at) const noexcept;
  std::string_view comm_of(const Route& rt, std::span<const std::byte> rec,
                           const RecordPosition& at) const noexcept;

  const TraceDatReader& reader_;
  Instance& inst_;
  std::vector<Route> routes_;  // by event ID
  Route unknown_;
  uint32_t unknown_slot_ = 0;
  std::vector<FilterRoute> kinds_;  // by registry index
  PrintkTable printk_;
  std::vector<std::string> swapper_;  // "swapper/N": the idle task's comm on CPU N
  CommTimeline timeline_;             // built only if a replay-side filter reads COMM
};

}  // namespace tracepipe::replay
