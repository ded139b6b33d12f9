#include "tracepipe/bench/peers/pinned_pool.h"

#include <fmt/core.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <stdexcept>

namespace tracepipe::peers {
namespace {

uint64_t clock_ns(clockid_t id) noexcept {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

bool pin(int cpu) noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
}

}  // namespace

PinnedPool::PinnedPool(std::vector<int> cpus)
    : cpus_(std::move(cpus)), elapsed_(cpus_.size()), errors_(cpus_.size()) {
  threads_.reserve(cpus_.size());
  for (uint32_t i = 0; i < cpus_.size(); ++i) threads_.emplace_back([this, i] { worker(i); });
  // Wait until every worker has pinned itself (or failed to).
  while (started_.load(std::memory_order_acquire) != cpus_.size()) std::this_thread::yield();
  if (pin_errors_.load() != 0) {
    quit_.store(true);
    generation_.fetch_add(uint64_t{1} << kCountBits, std::memory_order_release);
    generation_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
    throw std::runtime_error("cannot pin a bench thread to its CPU (sched_setaffinity)");
  }
}

PinnedPool::~PinnedPool() {
  quit_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(uint64_t{1} << kCountBits, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

void PinnedPool::worker(uint32_t index) {
  if (!pin(cpus_[index])) pin_errors_.fetch_add(1);
  started_.fetch_add(1, std::memory_order_release);
  uint64_t seen = 0;
  for (;;) {
    generation_.wait(seen, std::memory_order_acquire);
    const uint64_t g = generation_.load(std::memory_order_acquire);
    if (g == seen) continue;
    seen = g;
    if (quit_.load(std::memory_order_relaxed)) return;
    // The word carries the run's thread count: a worker that is not part of
    // the run never touches the run's state (it may wake late, while the
    // next run is being set up).
    const uint32_t active = static_cast<uint32_t>(g & kCountMask);
    if (index >= active) continue;
    // Spin barrier: start the timed loops together.
    arrived_.fetch_add(1, std::memory_order_acq_rel);
    while (arrived_.load(std::memory_order_acquire) < active) {
    }
    try {
      const uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
      const uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
      (*job_)(index);
      const uint64_t t1 = clock_ns(CLOCK_MONOTONIC);
      elapsed_[index] = Elapsed{t1 - t0, clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0};
    } catch (...) {
      errors_[index] = std::current_exception();
    }
    done_.fetch_add(1, std::memory_order_release);
    done_.notify_one();
  }
}

double PinnedPool::mean_per(const std::vector<Elapsed>& el, uint64_t n, bool cpu) noexcept {
  if (el.empty() || n == 0) return 0;
  double sum = 0;
  for (const Elapsed& e : el)
    sum += static_cast<double>(cpu ? e.cpu : e.wall) / static_cast<double>(n);
  return sum / static_cast<double>(el.size());
}

std::vector<PinnedPool::Elapsed> PinnedPool::run(uint32_t k,
                                                 const std::function<void(uint32_t)>& job) {
  if (k == 0 || k > cpus_.size())
    throw std::invalid_argument(
        fmt::format("PinnedPool::run: {} threads, pool has {}", k, cpus_.size()));
  job_ = &job;
  arrived_.store(0, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  for (uint32_t i = 0; i < k; ++i) errors_[i] = nullptr;
  const uint64_t g = generation_.load(std::memory_order_relaxed);
  generation_.store(((g >> kCountBits) + 1) << kCountBits | k, std::memory_order_release);
  generation_.notify_all();
  for (uint32_t d = done_.load(std::memory_order_acquire); d < k;
       d = done_.load(std::memory_order_acquire))
    done_.wait(d, std::memory_order_acquire);
  job_ = nullptr;
  for (uint32_t i = 0; i < k; ++i)
    if (errors_[i]) std::rethrow_exception(errors_[i]);
  return {elapsed_.begin(), elapsed_.begin() + k};
}

}  // namespace tracepipe::peers
