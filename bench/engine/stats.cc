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
