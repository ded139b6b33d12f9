#pragma once
// Summary statistics of repeated timings, as `perf stat -r N` reports them,
// plus the median that the bench's ratios use (robust to the odd slow run on
// a noisy machine).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

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

/// A median with its distribution-free 95% confidence interval: the order
/// statistics x(k) and x(n+1-k) of the sorted samples, k the largest rank
/// whose binomial coverage 1 - 2 P(Bin(n, 1/2) <= k-1) is at least 95%
/// (the sign-test interval; no assumption about the shape of the noise, and
/// one slow outlier moves it by one rank only). Needs n >= 6: below that no
/// pair of order statistics covers 95%, and [min, max] is returned with its
/// smaller coverage.
struct MedianCI {
  std::size_t n = 0;
  double median = 0;
  double lo = 0;          ///< lower bound x(k)
  double hi = 0;          ///< upper bound x(n+1-k)
  double half_width = 0;  ///< max(median - lo, hi - median): the "±" printed
  double coverage = 0;    ///< exact coverage of [lo, hi]; >= 0.95 when n >= 6
  double iqr_pct = 0;     ///< spread: 100 * (q3 - q1) / |median| (0 when median == 0)
};

/// Computes the median and its 95% interval of `samples` (any order; not
/// modified). All zero when empty.
MedianCI median_ci95(std::span<const double> samples);

/// Why a cost is or is not reported as a figure.
enum class Verdict : uint8_t {
  significant,   ///< 95% interval above 0 and within ±max_rel of the median
  too_few,       ///< fewer than 6 samples: no 95% interval exists
  not_positive,  ///< the interval reaches 0 or below: no cost distinguishable from noise
  wide,          ///< positive, but the interval is wider than ±max_rel of the median
};

/// The significance rule of every ns/event cell: a 95% interval that holds
/// no value <= 0 and whose half width is at most `max_rel` (10%) of the
/// median.
Verdict judge(const MedianCI& ci, double max_rel = 0.10);

/// Short reason printed for a verdict: "" for significant, else "few runs",
/// "≈ 0", "CI > ±10%" (with max_rel's percentage).
std::string verdict_text(Verdict v, double max_rel = 0.10);

/// Paired per-event costs in ns: (cell[i] - base[i]) * 1e9 / events for
/// every i < min(cell.size(), base.size()). Empty when events == 0.
std::vector<double> paired_ns_per_event(std::span<const double> cell_s,
                                        std::span<const double> base_s, unsigned long long events);

}  // namespace tracepipe::bench
