#pragma once
// `tracepipe replay --bench`: the replay's speed next to `trace-cmd report -F`
// with the same filters on the same file, measured in one run.
//
// Both sides are timed end to end as the user runs them, best of `reps`:
//   * replay: run_replay() on one thread (the per-core figure) and on all
//     threads, without -o; the time covers decoding the pages, stage ->
//     filter -> commit of every record (file open and setup excluded);
//   * trace-cmd: `trace-cmd report -F ... FILE > /dev/null`, a child
//     process (its CPU time from wait4's rusage; it also parses the file's
//     headers and prints the kept events as text, which is what its -F costs
//     a user).
// Events/s = records in the file / time. Both wall and CPU time are given:
// on a shared machine the CPU time is the steadier figure.
#include <cstdint>
#include <string>

#include "tracepipe/core/replay/replay.h"

namespace tracepipe::replay {

struct BenchOptions {
  unsigned reps = 5;
  std::string trace_cmd = "trace-cmd";  ///< executable; "" = do not run it
};

struct BenchTiming {
  double best_wall_s = 0, best_cpu_s = 0, median_wall_s = 0;
};

struct BenchResult {
  uint64_t records = 0;  ///< records in the file
  uint64_t kept = 0;     ///< kept by replay
  BenchTiming replay_one, replay_all;
  unsigned threads_all = 0;
  bool trace_cmd_ran = false;
  std::string trace_cmd_error;  ///< why it did not run
  BenchTiming trace_cmd;
  uint64_t trace_cmd_kept = 0;  ///< lines it printed (events kept by its filter)
};

/// Runs the benchmark. `options` are the replay's (its -F arguments are also
/// passed to trace-cmd); output and progress are turned off.
BenchResult run_bench(const ReplayOptions& options, const BenchOptions& bench);
std::string format_bench(const ReplayOptions& options, const BenchResult& r);

}  // namespace tracepipe::replay
