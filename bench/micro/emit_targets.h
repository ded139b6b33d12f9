#pragma once
// The emit-cost targets, judged from one run's medians of the `emit/...`
// cases in bench/micro/core_bench.cc, so that every run of the microbench
// says where the fast path stands (docs/measurements.md, "The write path").
// Ratios are taken between cases of the same run only: this machine's speed
// moves by 30% between days, the ratios by a few percent. Where the paired
// cases ran (bench/micro/emit_paired_bench.cc: the cases of one target interleaved
// in blocks of microseconds), a ratio target reads their median ratio over
// rounds instead of the ratio of two cases' medians, which also holds
// whatever the host did in the seconds between those cases.
#include <map>
#include <string>
#include <vector>

namespace tracepipe::bench {

/// One target: what was measured, the bound, and whether it holds.
struct TargetCheck {
  std::string what;  ///< e.g. "staged discard (ns)", "adaptive 100% / better policy"
  double value = 0;  ///< ns, or a ratio
  double bound = 0;  ///< the target: value <= bound
  bool met = false;
  std::string detail;  ///< the cases it was computed from, with their medians
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
///
/// `paired` holds the paired cases' counters (their medians over
/// repetitions), keyed by counter name: "staged_commit/no_filter",
/// "adaptive_100/no_filter", "adaptive_N/better" (N = 0, 50, 97, 100), each
/// with "_p25" and "_p75", and the legs' "<leg>_ns". A ratio target whose
/// paired counter is there reads it; the ns targets always read the single
/// cases.
[[nodiscard]] std::vector<TargetCheck> emit_targets(
    const std::map<std::string, double>& median_ns,
    const std::map<std::string, double>& paired = {});

/// The checks as a table, one line each, then "N of M targets met".
[[nodiscard]] std::string render_targets(const std::vector<TargetCheck>& checks);

/// The case name used as the key above, from a Google Benchmark run name:
/// "emit/no_filter/min_time:0.200" -> "no_filter"; "" for a non-emit case.
/// A paired case gives its name too ("paired/commit"): see is_paired_case().
[[nodiscard]] std::string emit_case_key(const std::string& run_name);

/// True for the key of a paired case ("paired/..."), whose counters, not its
/// time, are what the targets read.
[[nodiscard]] bool is_paired_case(const std::string& key);

}  // namespace tracepipe::bench
