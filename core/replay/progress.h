#pragma once
// The progress bar `tracepipe replay` draws on stderr for large files:
//
//   replay [##########............]  45%  812.0 MiB / 1.8 GiB  23.1 M events/s
//
// A background thread redraws it every 200 ms from counters the pipeline
// updates (relaxed atomics, one store per batch), and erases it at the end.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

namespace tracepipe::replay {

class ProgressBar {
 public:
  /// Starts drawing if `enabled`; total_bytes is the size of the input data.
  ProgressBar(bool enabled, uint64_t total_bytes, std::FILE* out = stderr);
  /// Stops and erases the bar.
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Adds work done (any thread).
  void add(uint64_t bytes, uint64_t records) noexcept {
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
    records_.fetch_add(records, std::memory_order_relaxed);
  }
  void stop();

  /// automatic mode: draw when stderr is a terminal and the file is large.
  static bool wanted(uint64_t total_bytes, std::FILE* out = stderr);
  static constexpr uint64_t kLargeFile = 64ull << 20;  ///< bytes

 private:
  void loop();
  void draw(bool final);

  bool enabled_;
  uint64_t total_;
  std::FILE* out_;
  std::atomic<uint64_t> bytes_{0}, records_{0};
  uint64_t start_ns_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tracepipe::replay
