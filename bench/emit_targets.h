#pragma once
// Issue 5's emit-cost targets, judged from one run's medians of the
// `emit/...` cases in bench/core_bench.cc, so that every run of the
// microbench says where the fast path stands (docs/core.md, "Performance").
// Ratios are taken between cases of the same run only: this machine's speed
// moves by 30% between days, the ratios by a few percent.
#include <map>
#include <string>
#include <vector>

namespace tracepipe::bench {

/// One target: what was measured, the bound, and whether it holds.
struct TargetCheck {
  std::string what;     ///< e.g. "staged discard (ns)", "adaptive 100% / better policy"
  double value = 0;     ///< ns, or a ratio
  double bound = 0;     ///< the target: value <= bound
  bool met = false;
  std::string detail;   ///< the cases it was computed from, with their medians
};

/// The targets, from medians in ns per emit keyed by case name without the
/// "emit/" prefix or the "/min_time:..." suffix ("no_filter",
/// "adaptive/accept_97", ...). A target whose cases did not all run is left
/// out (a filtered run judges only what it ran).
///   staged discard <= 5 ns       staged_discard/per_thread
///   commit <= 20 ns              no_filter
///   staged commit <= 1.15x       staged_commit/per_thread / no_filter
///   adaptive <= 1.05x            adaptive/accept_100 / no_filter
///   adaptive within 5% of the better of staged and direct, at 0, 50, 97
///   and 100% kept: accept_0 against staged_discard/per_thread and
///   direct_discard, accept_50 against staged_half/per_thread and
///   direct_half, accept_97 against staged_97/per_thread and direct_97,
///   accept_100 against staged_commit/per_thread and direct_commit.
[[nodiscard]] std::vector<TargetCheck> emit_targets(const std::map<std::string, double>& median_ns);

/// The checks as a table, one line each, then "N of M targets met".
[[nodiscard]] std::string render_targets(const std::vector<TargetCheck>& checks);

/// The case name used as the key above, from a Google Benchmark run name:
/// "emit/no_filter/min_time:0.200" -> "no_filter"; "" for a non-emit case.
[[nodiscard]] std::string emit_case_key(const std::string& run_name);

}  // namespace tracepipe::bench
