#pragma once
// `tracepipe bench` end to end: builds one engine per cell, runs the case
// matrix interleaved (every repetition runs each cell once, in the same
// order, so slow drift of the machine hits every cell alike), then the perf
// overwrite series, and returns the finalized report.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tracepipe/bench/engine/engine.h"
#include "tracepipe/bench/engine/model.h"
#include "tracepipe/bench/engine/progress.h"
#include "tracepipe/bench/engine/workload.h"

namespace tracepipe::bench {

struct BenchOptions {
  WorkloadConfig workload;
  uint32_t runs = 9;  ///< repetitions per cell (perf stat -r; odd, so the median is a run)
  std::vector<Case> cases{std::begin(kAllCases), std::end(kAllCases)};
  std::vector<Staging> stagings{std::begin(kAllStagings), std::end(kAllStagings)};
  std::string staging_on_name = "on";  ///< how Staging::per_cpu is printed: "on" or "per_cpu"
  EngineOptions engine;                ///< staging is set per cell
  std::optional<std::filesystem::path> filters_file;  ///< overrides of the case filters
  /// The replayed-mix table (mix.h), run first.
  bool mix = true;
  std::string mix_source;             ///< "" = the default capture, else a path or "embedded"
  uint32_t mix_rounds = 201;          ///< rounds of paired blocks per cell
  uint64_t mix_block_events = 32768;  ///< events per thread per block
  uint64_t mix_seed = 1;              ///< seed of the block order
  /// Called once the replayed-mix table is finalized, before the slower
  /// phases run (the CLI prints the table there).
  std::function<void(const BenchReport&)> on_mix_done;
  bool hackbench = true;             ///< run the end-to-end hackbench table
  uint64_t perf_events = 3'000'000;  ///< N of the second table; 0 = skip
  bool perf_syscall = true;          ///< a close(-1) per perf event
  bool warmup = true;                ///< one untimed short pass first
  double warn_spread_pct = 5;
};

/// Checks option ranges; throws std::invalid_argument naming the option.
void validate(const BenchOptions& options);

/// The cells of the first table, in run order: off once, then for each
/// traced case each staging mode.
std::vector<CaseSpec> case_matrix(const BenchOptions& options);

/// The replayed-mix phase alone, on `engines` (one per cell of `cells`,
/// cells[0] the off base): fills report.mix and report.mix_cases (raw
/// block times and counts; finalize() derives the rest). Pinned threads,
/// one per allowed CPU (unpinned with workload.pin false).
void run_mix(const BenchOptions& options, const std::vector<CaseSpec>& cells,
             const std::vector<CaseEngine*>& engines, const EventMix& mix, BenchReport& report,
             Progress& progress);

/// Runs everything. Throws on a system error or a filter that does not
/// compile (before any timed run).
BenchReport run_bench(const BenchOptions& options, Progress& progress);

}  // namespace tracepipe::bench
