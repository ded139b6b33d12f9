#include "tracepipe/bench/engine/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tracepipe::bench {

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.n = samples.size();
  if (s.n == 0) return s;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = s.n % 2 == 1 ? v[s.n / 2] : (v[s.n / 2 - 1] + v[s.n / 2]) / 2;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(s.n);
  if (s.n >= 2) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / double(s.n - 1));
  }
  s.stddev_pct = s.mean != 0 ? 100.0 * s.stddev / s.mean : 0;
  return s;
}

double ns_per_event(double median_case_s, double median_base_s, unsigned long long events) {
  if (events == 0) return 0;
  return (median_case_s - median_base_s) * 1e9 / double(events);
}

}  // namespace tracepipe::bench

namespace tracepipe::bench {
namespace {

// P(Bin(n, 1/2) <= j), summed in log space (exact enough for any n the bench
// uses: up to a few thousand samples).
double binom_half_cdf(std::size_t n, std::size_t j) {
  const double ln_half_n = double(n) * std::log(0.5);
  const double lg_n1 = std::lgamma(double(n) + 1);
  double sum = 0;
  for (std::size_t i = 0; i <= j && i <= n; ++i)
    sum +=
        std::exp(lg_n1 - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1) + ln_half_n);
  return std::min(sum, 1.0);
}

// Linear-interpolated quantile of sorted v (q in [0, 1]).
double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const double pos = q * double(v.size() - 1);
  const std::size_t i = static_cast<std::size_t>(pos);
  if (i + 1 >= v.size()) return v.back();
  return v[i] + (pos - double(i)) * (v[i + 1] - v[i]);
}

}  // namespace

MedianCI median_ci95(std::span<const double> samples) {
  MedianCI ci;
  ci.n = samples.size();
  if (ci.n == 0) return ci;
  std::vector<double> v(samples.begin(), samples.end());
  std::sort(v.begin(), v.end());
  const std::size_t n = ci.n;
  ci.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  // Largest k (1-based) with coverage 1 - 2 P(B <= k-1) >= 0.95.
  std::size_t k = 1;
  double coverage = 1 - 2 * binom_half_cdf(n, 0);
  for (std::size_t t = 2; t <= (n + 1) / 2; ++t) {
    const double c = 1 - 2 * binom_half_cdf(n, t - 1);
    if (c < 0.95) break;
    k = t;
    coverage = c;
  }
  ci.lo = v[k - 1];
  ci.hi = v[n - k];
  ci.coverage = coverage;
  ci.half_width = std::max(ci.median - ci.lo, ci.hi - ci.median);
  const double iqr = quantile_sorted(v, 0.75) - quantile_sorted(v, 0.25);
  ci.iqr_pct = ci.median != 0 ? 100.0 * iqr / std::fabs(ci.median) : 0;
  return ci;
}

Verdict judge(const MedianCI& ci, double max_rel) {
  if (ci.n < 6) return Verdict::too_few;
  if (ci.lo <= 0) return Verdict::not_positive;
  if (ci.half_width > max_rel * ci.median) return Verdict::wide;
  return Verdict::significant;
}

std::string verdict_text(Verdict v, double max_rel) {
  switch (v) {
    case Verdict::significant:
      return "";
    case Verdict::too_few:
      return "few runs";
    case Verdict::not_positive:
      return "≈ 0";
    case Verdict::wide:
      return "CI > ±" + std::to_string(int(std::lround(max_rel * 100))) + "%";
  }
  return "?";
}

std::vector<double> paired_ns_per_event(std::span<const double> cell_s,
                                        std::span<const double> base_s, unsigned long long events) {
  std::vector<double> out;
  if (events == 0) return out;
  const std::size_t n = std::min(cell_s.size(), base_s.size());
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back((cell_s[i] - base_s[i]) * 1e9 / double(events));
  return out;
}

}  // namespace tracepipe::bench
