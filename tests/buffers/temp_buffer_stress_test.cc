// Stress of the temp buffer: threads claim per-CPU slots (and per-thread
// slots) at random; a slot is never held by two claimers at once, every
// claim is released, and the fallbacks are counted. Label "concurrency".
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "buffers/temp_buffer.h"

using namespace tracepipe::buffers;

namespace {
#if defined(TRACEPIPE_SANITIZED)
constexpr int kIterations = 5000;
#else
constexpr int kIterations = 100000;
#endif
}  // namespace

TEST_CASE("temp buffer stress: one holder per slot, every busy claim counted", "[buffers][temp][stress]") {
  constexpr uint32_t kCpus = 2;
  constexpr int kThreads = 4;
  TempBuffer tb(TempBufferConfig{.cpus = kCpus, .slot_size = 512});
  std::atomic<int> owner[kCpus];
  for (auto& o : owner) o = -1;
  std::atomic<uint64_t> claims{0}, busy{0}, violations{0}, corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kIterations; ++i) {
        const uint32_t cpu = rng() % kCpus;
        const uint32_t len = 1 + rng() % tb.capacity();
        StagedRecord h = tb.try_claim(cpu, len);
        if (!h) {
          if (h.error() != StageError::busy) violations.fetch_add(1);
          busy.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        claims.fetch_add(1, std::memory_order_relaxed);
        if (owner[cpu].exchange(t) != -1) violations.fetch_add(1);
        std::memset(h.data().data(), t + 1, h.data().size());
        for (std::byte b : h.data())
          if (static_cast<int>(b) != t + 1) {
            corrupted.fetch_add(1);
            break;
          }
        owner[cpu].store(-1);
        TempBuffer::release(h);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(violations == 0);
  CHECK(corrupted == 0);
  CHECK(claims + busy == uint64_t{kThreads} * kIterations);
  CHECK(tb.stats(0).busy_fallbacks + tb.stats(1).busy_fallbacks == busy);
  for (uint32_t c = 0; c < kCpus; ++c) CHECK_FALSE(tb.busy_for_testing(c));
}

TEST_CASE("temp buffer stress: per-thread slots never collide", "[buffers][temp][stress]") {
  PerThreadTempBuffer tb(1024);
  std::atomic<uint64_t> corrupted{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        StagedRecord h = tb.try_claim(0, 64 + i % 900);
        if (!h) {
          failed.fetch_add(1);
          continue;
        }
        std::memset(h.data().data(), t + 1, h.data().size());
        std::this_thread::yield();
        for (std::byte b : h.data())
          if (static_cast<int>(b) != t + 1) {
            corrupted.fetch_add(1);
            break;
          }
        PerThreadTempBuffer::release(h);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(corrupted == 0);
  CHECK(failed == 0);  // no nesting here: every claim succeeds
}
