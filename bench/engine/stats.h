#pragma once
// Summary statistics of repeated timings, as `perf stat -r N` reports them,
// plus the median that the bench's ratios use (robust to the odd slow run on
// a noisy machine).
#include <cstddef>
#include <span>

namespace tracepipe::bench {

/// Summary of n samples (seconds). All zero when n == 0.
struct Summary {
  std::size_t n = 0;
  double mean = 0;
  double median = 0;      ///< middle sample; mean of the two middle ones for even n
  double stddev = 0;      ///< sample standard deviation (n - 1 denominator); 0 for n < 2
  double stddev_pct = 0;  ///< 100 * stddev / mean; 0 when mean == 0
  double min = 0;
  double max = 0;
};

/// Computes the summary of `samples` (any order; not modified).
Summary summarize(std::span<const double> samples);

/// Cost per event in ns of a traced case over the untraced base, from the
/// medians: (median_case - median_base) / events * 1e9. Returns 0 when
/// events == 0. May be negative when the difference is within noise.
double ns_per_event(double median_case_s, double median_base_s, unsigned long long events);

}  // namespace tracepipe::bench
