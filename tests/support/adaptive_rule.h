#pragma once
// Adaptive staging's moving average, written again for the tests' models
// (tests/core/instance/adaptive_model.h, tests/core/instance/staging_core_test.cc)
// without the library's code, so that a mistake in core/instance/adaptive_average.h's
// arithmetic makes the instance and a model disagree. The rule
// (docs/instance.md, "Adaptive staging"): s in 1/65536; a reject steps s 1/32
// of the way to 0, rounded down; a run of k accepts caught up at the next
// reject leaves the distance 65536 - s times (31/32)^k, the factor rounded
// to nearest in 1/2^31 and the product rounded down.
#include <cmath>
#include <cstdint>
#include <vector>

namespace tp_test {

/// s after one reject.
inline int64_t rule_reject_step(int64_t s) {
  return s - (s + 31) / 32;
}  // s - ceil(s/32) = floor(31s/32)

/// s after a run of k accepts.
inline int64_t rule_after_accepts(int64_t s, uint64_t k) {
  static const std::vector<uint64_t> factor = [] {
    std::vector<uint64_t> f;
    for (int i = 0;; ++i) {
      const auto v =
          static_cast<uint64_t>(std::llround(std::pow(31.0L / 32.0L, i) * 2147483648.0L));
      if ((65536 * v) >> 31 == 0) break;  // from here on every distance is 0
      f.push_back(v);
    }
    return f;
  }();
  if (k >= factor.size()) return 65536;
  return 65536 - static_cast<int64_t>((static_cast<uint64_t>(65536 - s) * factor[k]) >> 31);
}

}  // namespace tp_test
