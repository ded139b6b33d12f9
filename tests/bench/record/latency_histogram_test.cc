// The record bench's latency histogram (bench/record/latency_histogram.h):
// bucket bounds, and quantiles read within one bucket (1/16) of the truth.
#include "tracepipe/bench/record/latency_histogram.h"

#include <catch2/catch.hpp>
#include <cstdint>

using tracepipe::record_bench::LatencyHistogram;

TEST_CASE("latency histogram: every value lies within its bucket's bounds", "[bench][record]") {
  for (uint64_t v : {0ull, 1ull, 15ull, 16ull, 17ull, 31ull, 32ull, 33ull, 1000ull, 123456789ull,
                     (1ull << 40) + 12345, ~0ull}) {
    const size_t i = LatencyHistogram::index(v);
    INFO("v = " << v << ", bucket " << i);
    REQUIRE(i < LatencyHistogram::kBuckets);
    CHECK(LatencyHistogram::upper(i) >= v);
    // The bucket below ends before v: buckets are contiguous and ordered.
    if (i > 0) CHECK(LatencyHistogram::upper(i - 1) < v);
    // A bucket is at most 1/16 of its values wide.
    CHECK(LatencyHistogram::upper(i) - v <= v / 16);
  }
  CHECK(LatencyHistogram::upper(15) == 15);
  CHECK(LatencyHistogram::upper(16) == 16);
  CHECK(LatencyHistogram::upper(LatencyHistogram::index(40)) == 41);  // [40, 41]
}

TEST_CASE("latency histogram: quantiles of a known distribution", "[bench][record]") {
  LatencyHistogram h;
  CHECK(h.quantile(0.5) == 0);
  // 9,900 emits of 20, 99 of 1,000, one of 5,000,000.
  for (int i = 0; i < 9900; ++i) h.add(20);
  for (int i = 0; i < 99; ++i) h.add(1000);
  h.add(5'000'000);
  CHECK(h.count() == 10'000);
  CHECK(h.max() == 5'000'000);
  CHECK(h.quantile(0.5) == 20);   // exact below 32
  CHECK(h.quantile(0.99) == 20);  // rank 9,900: the last 20
  const uint64_t p999 = h.quantile(0.999);
  CHECK(p999 >= 1000);
  CHECK(p999 <= 1000 + 1000 / 16);
  CHECK(h.quantile(1.0) == 5'000'000);  // capped at the max, not the bucket's end
}
