#pragma once
// The bench's binding to a tracing engine: one configured engine per cell of
// the case matrix (staging mode x case), created before the timed runs and
// reused by every repetition of that cell, so set-up (buffer allocation,
// filter compilation) is never timed.
#include <cstdint>
#include <memory>
#include <string>

#include "tracepipe/bench/engine/case_filters.h"
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
