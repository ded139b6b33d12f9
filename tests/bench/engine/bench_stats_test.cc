// bench/engine/stats: the numbers every table row is made of.
#include <algorithm>
#include <catch2/catch.hpp>
#include <vector>

#include "tracepipe/bench/engine/stats.h"

using namespace tracepipe::bench;

TEST_CASE("bench stats: summary of an odd sample", "[tools][bench]") {
  std::vector<double> v{3.0, 1.0, 2.0, 5.0, 4.0};
  Summary s = summarize(v);
  CHECK(s.n == 5);
  CHECK(s.mean == Approx(3.0));
  CHECK(s.median == Approx(3.0));
  CHECK(s.min == 1.0);
  CHECK(s.max == 5.0);
  // sample stddev: sqrt(10 / 4)
  CHECK(s.stddev == Approx(1.5811388));
  CHECK(s.stddev_pct == Approx(100 * 1.5811388 / 3.0));
  CHECK(v[0] == 3.0);  // input untouched
}

TEST_CASE("bench stats: even sample, single sample, empty", "[tools][bench]") {
  std::vector<double> even{4.0, 1.0, 3.0, 2.0};
  CHECK(summarize(even).median == Approx(2.5));
  std::vector<double> one{0.25};
  Summary s1 = summarize(one);
  CHECK(s1.median == 0.25);
  CHECK(s1.stddev == 0);
  CHECK(s1.stddev_pct == 0);
  Summary s0 = summarize({});
  CHECK(s0.n == 0);
  CHECK(s0.mean == 0);
}

TEST_CASE("bench stats: ns per event over the base", "[tools][bench]") {
  // 1.31 s against 0.78 s over 10 M events: 53 ns per event.
  CHECK(ns_per_event(1.31, 0.78, 10'000'000) == Approx(53.0));
  CHECK(ns_per_event(0.70, 0.78, 1'000'000) == Approx(-80.0));
  CHECK(ns_per_event(1.0, 0.5, 0) == 0);
}

TEST_CASE("bench stats: the median's 95% interval on known samples", "[tools][bench]") {
  // n = 10: k = 2 (coverage 1 - 2 * 11/1024 = 97.9%; k = 3 would cover 89%).
  std::vector<double> v{10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
  MedianCI ci = median_ci95(v);
  CHECK(ci.n == 10);
  CHECK(ci.median == Approx(5.5));
  CHECK(ci.lo == 2);
  CHECK(ci.hi == 9);
  CHECK(ci.half_width == Approx(3.5));
  CHECK(ci.coverage == Approx(1 - 2 * 11.0 / 1024));
  CHECK(ci.iqr_pct == Approx(100 * (7.75 - 3.25) / 5.5));
  // n = 6, the smallest with a 95% interval: [min, max], coverage 1 - 2/64.
  std::vector<double> six{1, 2, 3, 4, 5, 100};
  ci = median_ci95(six);
  CHECK(ci.lo == 1);
  CHECK(ci.hi == 100);
  CHECK(ci.coverage == Approx(1 - 2.0 / 64));
  // n = 5: none covers 95%; [min, max] with its 93.75%.
  ci = median_ci95(std::vector<double>{1, 2, 3, 4, 5});
  CHECK(ci.coverage == Approx(0.9375));
  CHECK(judge(ci) == Verdict::too_few);
  // n = 100: the sign-test ranks 40 and 61 (coverage 96.5%), so one huge
  // outlier does not move the interval.
  std::vector<double> h;
  for (int i = 1; i <= 100; ++i) h.push_back(i);
  h.back() = 1e9;
  ci = median_ci95(h);
  CHECK(ci.lo == 40);
  CHECK(ci.hi == 61);
  CHECK(ci.coverage >= 0.95);
  CHECK(ci.coverage < 0.97);
  CHECK(median_ci95(std::vector<double>{}).n == 0);
}

TEST_CASE("bench stats: the significance rule", "[tools][bench]") {
  auto ci_of = [](double median, double lo, double hi, size_t n = 20) {
    MedianCI c;
    c.n = n;
    c.median = median;
    c.lo = lo;
    c.hi = hi;
    c.half_width = std::max(median - lo, hi - median);
    return c;
  };
  CHECK(judge(ci_of(10, 9.0, 11.0)) == Verdict::significant);  // exactly ±10%
  CHECK(judge(ci_of(10, 8.9, 10.5)) == Verdict::wide);         // -11%
  CHECK(judge(ci_of(10, 9.5, 11.2)) == Verdict::wide);         // +12%
  CHECK(judge(ci_of(0.5, -0.1, 1.0)) == Verdict::not_positive);
  CHECK(judge(ci_of(-3, -4, -2)) == Verdict::not_positive);
  CHECK(judge(ci_of(10, 9.9, 10.1, 5)) == Verdict::too_few);
  CHECK(judge(ci_of(10, 9.7, 10.3), 0.02) == Verdict::wide);  // a stricter bound
  CHECK(verdict_text(Verdict::significant).empty());
  CHECK(verdict_text(Verdict::wide) == "CI > ±10%");
  CHECK(verdict_text(Verdict::not_positive) == "≈ 0");
  CHECK(verdict_text(Verdict::too_few) == "few runs");
}

TEST_CASE("bench stats: paired per-event costs", "[tools][bench]") {
  std::vector<double> cell{1.5, 1.7, 1.4}, base{1.0, 1.1, 1.0, 9.0};
  auto c = paired_ns_per_event(cell, base, 1000);
  REQUIRE(c.size() == 3);  // the shorter of the two
  CHECK(c[0] == Approx(0.5e6));
  CHECK(c[1] == Approx(0.6e6));
  CHECK(c[2] == Approx(0.4e6));
  CHECK(paired_ns_per_event(cell, base, 0).empty());
}
