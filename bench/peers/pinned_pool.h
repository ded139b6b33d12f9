#pragma once
// Worker threads pinned one per CPU, reused by every timed round of the peers
// bench so that thread creation is never timed.
//
// run(k, job) wakes workers 0..k-1; each one waits at a spin barrier until
// all k are awake (so two-thread rounds really overlap), then times its own
// call of job(worker), both in wall time (CLOCK_MONOTONIC) and in the
// thread's CPU time (CLOCK_THREAD_CPUTIME_ID: user + system, without the
// time other tasks ran on its CPU). run() returns when all k are done.
//
// Invariants: one run() at a time (the caller's thread only). The wake-up
// word `generation_` holds (sequence << 16 | k): a worker decides from that
// one load whether it is part of the run, so a worker that wakes late never
// reads state of a later run. A participant touches `job_`, `elapsed_[i]`
// and `errors_[i]` only between the store that wakes it (release) and its
// increment of `done_` (release), which run() waits for (acquire).
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace tracepipe::peers {

class PinnedPool {
 public:
  /// Starts one worker per entry of `cpus`, worker i pinned to cpus[i].
  /// Throws std::runtime_error if a thread cannot be pinned.
  explicit PinnedPool(std::vector<int> cpus);
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  size_t size() const noexcept { return cpus_.size(); }
  const std::vector<int>& cpus() const noexcept { return cpus_; }

  /// Time one worker spent in its job, in ns.
  struct Elapsed {
    uint64_t wall = 0;
    uint64_t cpu = 0;  ///< this thread's CPU time (user + system)
  };

  /// Mean over workers of (CPU time if `cpu`, else wall time) / n, in ns.
  static double mean_per(const std::vector<Elapsed>& el, uint64_t n, bool cpu) noexcept;

  /// Runs job(i) on workers i = 0..k-1 together; returns each worker's
  /// times. Rethrows the first exception a job threw.
  std::vector<Elapsed> run(uint32_t k, const std::function<void(uint32_t)>& job);

 private:
  void worker(uint32_t index);

  std::vector<int> cpus_;
  std::vector<std::thread> threads_;
  std::vector<Elapsed> elapsed_;
  std::vector<std::exception_ptr> errors_;
  static constexpr unsigned kCountBits = 16;
  static constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;

  const std::function<void(uint32_t)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint32_t> arrived_{0};
  std::atomic<uint32_t> done_{0};
  std::atomic<bool> quit_{false};
  std::atomic<int> pin_errors_{0};
  std::atomic<uint32_t> started_{0};
};

}  // namespace tracepipe::peers
