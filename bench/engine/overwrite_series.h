#pragma once
// The second table: the experiment of the perf overwrite series ("perf core:
// Read from overwrite ring buffer", Wang Nan, 2016), which timed 3,000,000
// close(-1) calls traced by raw_syscalls into perf's ring buffer, forward
// (a reader consuming) against backward/overwrite (nobody reading until a
// paused snapshot), mean and stddev over repeated runs.
//
// Here one writer thread, pinned to the first allowed CPU, emits N
// sys_enter-shaped records (64 bytes, the kernel layout), each after a
// close(-1) system call unless `syscall` is false. Cases:
//
//   base                the same loop, nothing written
//   drop+consumer       drop-newest buffer; a consumer thread, pinned to
//                       another CPU when there is one, reads concurrently
//   overwrite           overwrite buffer; nobody reads (flight recorder)
//   overwrite+snapshot  overwrite buffer; every `snapshot_every` events the
//                       writer's sibling thread pauses the buffer, reads it
//                       newest first, and resumes (writes during the pause
//                       are lost and counted)
//
// Runs are interleaved like the first table's.
#include <cstdint>
#include <string>
#include <vector>

#include "tracepipe/bench/engine/model.h"
#include "tracepipe/bench/engine/progress.h"

namespace tracepipe::bench {

struct OverwriteSeriesOptions {
  uint64_t events = 3'000'000;  ///< N per run
  bool syscall = true;          ///< a close(-1) per event
  uint32_t runs = 10;
  uint64_t buffer_bytes_per_cpu = 1408 * 1024;
  std::string clock = "local";
  bool pin = true;
  uint32_t snapshot_period_ms = 10;  ///< overwrite+snapshot: one snapshot per period
};

/// Runs the four cases `runs` times each, interleaved. Returns the raw
/// results (finalize() in report.h derives the summaries).
std::vector<PerfResult> run_overwrite_series(const OverwriteSeriesOptions& options,
                                             Progress& progress);

}  // namespace tracepipe::bench
