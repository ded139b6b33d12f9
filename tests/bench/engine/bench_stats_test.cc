// bench/engine/stats: the numbers every table row is made of.
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
