#pragma once
// Table 3 of the peers bench: the main bench's hackbench cases (bench/engine/)
// traced by tracepipe and by the kernel's own trace events, interleaved.
//
//   every repetition, for each case (off, all, reject, accept, half):
//     tracepipe   the bench's engine for the case (make_case_engine): the
//                 workload's emit points record sched_switch, sched_wakeup,
//                 sys_enter, sys_exit into a tracepipe Instance
//     kernel      the same workload with no emit point (NullTracer) while the
//                 kernel's sched:sched_switch, sched:sched_wakeup,
//                 raw_syscalls:sys_enter and raw_syscalls:sys_exit record into
//                 a dedicated tracefs instance (tracefs.h), with the case's
//                 filter on each event (the same kernel-syntax expressions)
//
// The kernel instance is restricted to this process's threads
// (set_event_pid = the calling thread, options/event-fork = 1, so the
// workload threads it creates are followed), and uses the bench engine's
// buffer size and overflow mode. Its events are enabled just before each of
// its runs and disabled after (untimed), so they never fire during
// tracepipe's runs.
//
// A run's time is the process's CPU time over the run (all threads, user +
// system; CLOCK_PROCESS_CPUTIME_ID) by default, so that time other tasks of
// a shared machine take is not counted; --timing wall uses the workload's
// wall time (release to last thread's end) as the main bench does.
// ns per event = (median time of the case - median time of that side's off)
// / events per run. tracepipe's events per run are its engine's count; the
// kernel's are the records of its `all` runs (entries + overrun + dropped;
// median), since a rejected kernel event leaves no count. reject/commit =
// ns(reject) / ns(all): the cost of an event the filter drops, relative to
// one that is recorded.
#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "tracepipe/bench/engine/engine.h"
#include "tracepipe/bench/engine/model.h"
#include "tracepipe/bench/engine/progress.h"
#include "tracepipe/bench/engine/stats.h"
#include "tracepipe/bench/engine/workload.h"

namespace tracepipe::peers {

class TracefsInstance;

struct KernelTableOptions {
  bench::WorkloadConfig workload;
  uint32_t runs = 5;
  std::vector<bench::Case> cases;  ///< off is always run
  bench::EngineOptions engine;     ///< tracepipe's engine; its buffer/mode also set the kernel's
  bool warmup = true;
  bool cpu_time = true;  ///< process CPU time (else the workload's wall time)
};

/// One side's runs of one case.
struct HackbenchSide {
  std::vector<double> seconds;       ///< one per run (CPU or wall, KernelTableOptions::cpu_time)
  std::vector<double> wall_seconds;  ///< the workload's wall time of the same runs
  bench::Summary summary;
  uint64_t events = 0;      ///< events emitted per run (median; kernel: from `all`)
  uint64_t recorded = 0;    ///< events recorded per run (median)
  double ns_per_event = 0;  ///< over the side's own `off`; 0 for off
};

struct KernelRow {
  bench::Case kase = bench::Case::off;
  HackbenchSide tracepipe;
  HackbenchSide kernel;
};

struct KernelTable {
  std::vector<KernelRow> rows;             ///< off first
  std::vector<std::string> kernel_events;  ///< "sched:sched_switch", ...
  std::vector<std::string> warnings;
  std::string engine;  ///< tracepipe engine description
  /// ns(reject)/ns(all) of each side; < 0 when a case is missing or its
  /// cost is not above noise.
  double tracepipe_reject_ratio = -1;
  double kernel_reject_ratio = -1;
};

/// Runs table 3. Throws PeerUnavailable if the kernel lacks one of the four
/// events, std::runtime_error on a tracefs or workload error. `instance` is
/// left with every event disabled.
KernelTable run_kernel_table(const KernelTableOptions& options, TracefsInstance& instance,
                             bench::Progress& progress);

}  // namespace tracepipe::peers
