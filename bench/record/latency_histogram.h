#pragma once
// A histogram of durations in log-linear buckets (HdrHistogram's layout at
// 1/16 resolution): exact below 32, then 16 buckets per power of two, so a
// percentile is read within 1/16 (6.25%) of its value. Fixed size (976
// counters), no allocation: the record bench's writer adds one duration per
// emit on its own thread and the report reads it after the writer joined.
//
// Thread-safety: none.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace tracepipe::record_bench {

class LatencyHistogram {
 public:
  static constexpr uint32_t kSub = 16;  ///< buckets per power of two
  static constexpr size_t kBuckets = (63 - 3) * kSub + kSub;

  /// Adds one duration (any unit; the reader applies the same one).
  void add(uint64_t v) noexcept {
    ++counts_[index(v)];
    ++n_;
    max_ = std::max(max_, v);
  }
  uint64_t count() const noexcept { return n_; }
  uint64_t max() const noexcept { return max_; }

  /// The value at quantile q in [0, 1]: the highest value of the bucket
  /// holding that rank (capped at max()), 0 when empty.
  uint64_t quantile(double q) const noexcept {
    if (n_ == 0) return 0;
    const auto rank = static_cast<uint64_t>(q * static_cast<double>(n_ - 1)) + 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(upper(i), max_);
    }
    return max_;
  }

  /// The bucket of v: v itself below kSub, then (exponent, top 4 bits after
  /// the leading one).
  static size_t index(uint64_t v) noexcept {
    if (v < kSub) return static_cast<size_t>(v);
    const int e = 63 - __builtin_clzll(v);  // >= 4
    return static_cast<size_t>(e - 3) * kSub + ((v >> (e - 4)) & (kSub - 1));
  }
  /// The highest value bucket i holds.
  static uint64_t upper(size_t i) noexcept {
    if (i < kSub) return i;
    const auto e = static_cast<int>(i / kSub) + 3;
    const uint64_t lower = (kSub + i % kSub) << (e - 4);
    return lower + ((uint64_t{1} << (e - 4)) - 1);
  }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t n_ = 0;
  uint64_t max_ = 0;
};

}  // namespace tracepipe::record_bench
