#pragma once
// The bench's binding to a tracing engine: one configured engine per cell of
// the case matrix (staging mode x case), created before the timed runs and
// reused by every repetition of that cell, so set-up (buffer allocation,
// filter compilation) is never timed.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "tracepipe/bench/engine/case_filters.h"
#include "tracepipe/bench/engine/mix.h"
#include "tracepipe/bench/engine/model.h"
#include "tracepipe/bench/engine/workload.h"

namespace tracepipe::bench {

/// Engine settings shared by every cell.
struct EngineOptions {
  Staging staging = Staging::per_cpu;
  uint64_t buffer_bytes_per_cpu = 1408 * 1024;  ///< the kernel's default buffer_size_kb
  bool overwrite = true;                        ///< false: drop newest when full
  std::string clock = "local";                  ///< a trace clock name (core/clock/trace_clock.h)
};

/// One cell's engine.
class CaseEngine {
 public:
  virtual ~CaseEngine() = default;
  /// One timed run of the workload, emitting into this engine. Counts are
  /// reset before the run. Throws what run_hackbench throws.
  virtual RunTiming run(const WorkloadConfig& workload) = 0;
  /// The engine's counts for the last run().
  virtual RunCounts last_counts() const = 0;

  /// The replayed mix's inner loop: emits `count` events of `lane` from the
  /// calling thread (lane[0], lane[1], ..., starting over at the end), each
  /// through the instance's emit path with the record's fields copied in
  /// place. Allocates, locks and calls nothing (the engine's contract); the
  /// caller times it. `lane` must not be empty.
  virtual void replay(std::span<const MixRecord> lane, uint64_t count) noexcept = 0;
  /// Registers the calling thread with the engine (once per thread, before
  /// any timed replay: one allocation and two system calls).
  virtual void prepare_thread() = 0;
  /// The engine's counts since it was built (emitted, accepted, rejected,
  /// lost, staged, ...); subtract two snapshots for a phase's counts.
  virtual RunCounts totals() const = 0;
  /// Consumes what a drop-newest buffer holds, so that the next block or
  /// run starts with room (overwrite buffers need nothing). Untimed; not
  /// while a replay or run is in progress.
  virtual void drain() = 0;
};

/// Checks options that do not depend on the case (clock name, buffer size);
/// throws std::invalid_argument with a readable reason.
void validate(const EngineOptions& options);

/// Builds the engine of one cell. Every event is enabled unless `kase` is
/// off; `filters[e]` ("" = none) is compiled for event e against its kernel
/// format. Throws std::runtime_error carrying the kernel's filter error
/// message and caret when an expression does not compile.
std::unique_ptr<CaseEngine> make_case_engine(const EngineOptions& options, Case kase,
                                             const EventFilters& filters);

/// One line naming what the emit points are bound to, for the report.
std::string engine_description(const EngineOptions& options);

}  // namespace tracepipe::bench
